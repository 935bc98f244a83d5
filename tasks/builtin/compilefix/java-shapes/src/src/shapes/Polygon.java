package shapes;

/** A simple polygon given by its vertices in order. */
public final class Polygon implements Shape {
    private final double[] xs;
    private final double[] ys;

    public Polygon(double[] xs, double[] ys) {
        if (xs.length != ys.length || xs.length < 3) {
            throw new IllegalArgumentException("a polygon needs at least 3 vertices");
        }
        this.xs = xs.clone();
        this.ys = ys.clone();
    }

    public static Polygon rectangle(double w, double h) {
        return new Polygon(new double[] {0, w, w, 0}, new double[] {0, 0, h, h});
    }

    @Override
    public String name() {
        return xs.length + "-gon";
    }

    /** The shoelace formula. */
    @Override
    public double area() {
        double twice = 0;
        for (int i = 0; i < xs.length; i++) {
            int j = (i + 1) % xs.length;
            twice += xs[i] * ys[j] - xs[j] * ys[i];
        return Math.abs(twice) / 2;
    }

    @Override
    public double perimeter() {
        double p = 0;
        for (int i = 0; i < xs.length; i++) {
            int j = (i + 1) % xs.length;
            p += Math.hypot(xs[j] - xs[i], ys[j] - ys[i]);
        }
        return p;
    }
}
