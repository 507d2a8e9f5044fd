/* A small bank with two tellers. `balance` is guarded by `bank_lock`
 * everywhere except in `audit`, and `served` is never guarded. */
#include <pthread.h>
#include <stdio.h>

static int balance = 100;
static int served;
static pthread_mutex_t bank_lock = PTHREAD_MUTEX_INITIALIZER;

static void deposit(int amount) {
    pthread_mutex_lock(&bank_lock);
    balance += amount;
    pthread_mutex_unlock(&bank_lock);
}

static void *teller(void *arg) {
    int id = *(int *)arg;
    for (int i = 0; i < 1000; i++) {
        deposit(id);
        served++;
    }
    return NULL;
}

static void *audit(void *arg) {
    (void)arg;
    if (balance < 0)
        puts("overdrawn");
    return NULL;
}

int main(void) {
    pthread_t t1, t2, a;
    int one = 1, two = 2;
    pthread_create(&t1, NULL, teller, &one);
    pthread_create(&t2, NULL, teller, &two);
    pthread_create(&a, NULL, audit, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pthread_join(a, NULL);
    printf("%d %d\n", balance, served);
    return 0;
}
