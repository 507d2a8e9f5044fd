/* Fixture for the Neovim end-to-end test: `counter` is written by the
 * worker while it holds `m`, and by main, after pthread_create, without it. */
#include <pthread.h>
#include <stddef.h>

int counter;
pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    counter++; /* guarded */
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    counter++; /* unguarded — races with worker */
    pthread_join(t, NULL);
    return 0;
}
