package grades;

/** Prints the ranking of a small course. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        Gradebook book = new Gradebook();
        int[][] scores = {{92, 88, 95}, {71, 64, 80}, {55, 62, 58}, {88, 91, 79}};
        String[] names = {"Ada", "Brian", "Chen", "Dana"};
        for (int i = 0; i < names.length; i++) {
            Student s = book.enroll(names[i]);
            for (int score : scores[i]) {
                s.addScore(score);
            }
        }
        int rank = 1;
        for (Student s : book.ranking()) {
            System.out.printf("%d. %-6s %6.2f %c%n", rank++, s.name(), s.average(), Gradebook.letter(s.average()));
        }
        System.out.printf("class average %.2f%n", book.classAverage());
    }
}
