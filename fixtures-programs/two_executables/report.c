#include <stdio.h>
extern int requests;
void bump(void);

int main(void) {
    requests = 5; // NORACE
    bump();
    printf("%d\n", requests); // NORACE
    return 0;
}
