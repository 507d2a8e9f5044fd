int hits = 0;
