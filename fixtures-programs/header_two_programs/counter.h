#ifndef COUNTER_H
#define COUNTER_H
extern int total;
static inline void add(void) {
    total++; // RACE
}
#endif
