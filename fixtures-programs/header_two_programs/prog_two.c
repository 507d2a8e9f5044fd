/* Two executables include counter.h; in each, two threads call add().
 * The race in the header is reported once, naming both programs.
 * Build: gcc -fsanitize=thread -g prog_two.c -lpthread */
#include <pthread.h>
#include "counter.h"
int total;

static void *run_two(void *arg) {
    add();
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, run_two, 0);
    pthread_create(&b, 0, run_two, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
