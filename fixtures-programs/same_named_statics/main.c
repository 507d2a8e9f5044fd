/* Two units each keep a `static int counter`: two objects, one per unit
 * (nm shows two local symbols). Each is written by one thread only.
 * Build: gcc -fsanitize=thread -g main.c a.c b.c -lpthread */
#include <pthread.h>
void *run_a(void *arg);
void *run_b(void *arg);

int main(void) {
    pthread_t ta, tb;
    pthread_create(&ta, 0, run_a, 0);
    pthread_create(&tb, 0, run_b, 0);
    pthread_join(ta, 0);
    pthread_join(tb, 0);
    return 0;
}
