/* `hits` is defined in shared.c and declared extern in main.c and
 * worker.c: one object, written by main and the worker without a lock.
 * Build: gcc -fsanitize=thread -g main.c worker.c shared.c -lpthread */
#include <pthread.h>
extern int hits;
void *worker(void *arg);

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    hits++; // RACE
    pthread_join(t, 0);
    return 0;
}
