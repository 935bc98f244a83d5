package shapes;

/** A closed plane figure. */
public interface Shape {
    String name();

    double area();

    double perimeter();
}
