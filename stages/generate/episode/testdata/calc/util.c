int add(int a, int b) {
	return a + b;
}

int scale(int x) {
	return 2 * x;
}
