package grades;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A student and the scores (0-100) of their assignments. */
public final class Student {
    private final String name;
    private final List<Integer> scores = new ArrayList<>();

    public Student(String name) {
        this.name = name;
    }

    public String name() {
        return name;
    }

    public void addScore(int score) {
        if (score < 0 || score > 100) {
            throw new IllegalArgumentException("score out of range: " + score);
        }
        scores.add(score);
    }

    public List<Integer> scores() {
        return Collections.unmodifiableList(scores);
    }

    /** The mean score, 0 when there is none. */
    public int average() {
        if (scores.isEmpty()) {
            return 0;
        }
        int sum = 0;
        for (int s : scores) {
            sum += s;
        }
        return (double) sum / scores.size();
    }
}
