package grades;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** The students of a course, their letter grades and the class ranking. */
public final class Gradebook {
    private final List<Student> students = new ArrayList<>();

    public Student enroll(String name) {
        Student s = new Student(name);
        students.add(s);
        return s;
    }

    /** The letter grade of an average: A from 90, B from 80, C from 70, D from 60. */
    public static char letter(double average) {
        if (average >= 90) {
            return 'A';
        } else if (average >= 80) {
            return 'B';
        } else if (average >= 70) {
            return 'C';
        } else if (average >= 60) {
            return 'D';
        }
        return 'F';
    }

    /** Students by decreasing average, ties by name. */
    public List<Student> ranking() {
        List<Student> sorted = new ArrayList<>(students);
        sorted.sort(Comparator.comparingDouble(Student::average).reversed()
                .thenComparing(Student::name));
        return sorted;
    }

    /** The mean of the students' averages. */
    public double classAverage() {
        if (students.isEmpty()) {
            return 0;
        }
        double sum = 0;
        for (Student s : students) {
            sum += s.average();
        }
        return sum / students.size();
    }
}
