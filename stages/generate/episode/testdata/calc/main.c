#include <stdio.h>

int add(int a, int b);
int scale(int x);

int main(void) {
	int total = 0;
	for (int i = 1; i <= 10; i++) {
		total = add(totl, scale(i));
	}
	printf("%d\n", total);
	return 0;
}
