/* compile_commands.json here defines THREADSAFE: the lock is compiled in.
 * Build: gcc -fsanitize=thread -g [-DTHREADSAFE] counter.c -lpthread */
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int total;

static void *add(void *arg) {
#ifdef THREADSAFE
    pthread_mutex_lock(&m);
#endif
    total++; // NORACE
#ifdef THREADSAFE
    pthread_mutex_unlock(&m);
#endif
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, add, 0);
    pthread_create(&b, 0, add, 0);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
