package shapes;

import java.util.Comparator;
import java.util.List;

/** Prints shapes by decreasing area with their perimeters. */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        List<Shape> shapes = List.of(
                new Circle(1.5),
                Polygon.rectangle(3, 2),
                new Polygon(new double[] {0, 4, 0}, new double[] {0, 0, 3}));
        shapes.stream()
                .sorted(Comparator.comparingDouble(Shape::area).reversed())
                .forEach(s -> System.out.printf("%-12s area %7.3f  perimeter %7.3f%n", s.name(), s.area(), s.perimeter()));
        double total = 0;
        for (Shape s : shapes) {
            total += s.area();
        }
        System.out.printf("total area %.3f%n", total);
    }
}
