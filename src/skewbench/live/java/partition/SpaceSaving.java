package skewbench.partition;

import java.io.Serializable;

/**
 * One source's SpaceSaving sketch (Metwally, Agrawal, El Abbadi 2005) as a stream summary, as
 * skewbench.kernel.spacesaving keeps it: at most {@code capacity} entries (key, count, err);
 * buckets of equal counts in ascending order, each a FIFO list of its entries in the order they
 * reached that count; a full sketch gives a new key the slot of the first entry of the first
 * bucket (the minimum count, changed the longest ago), with err = that count and count + 1.
 * Every update O(1); a key's slot is found in an open-addressing table.
 */
public final class SpaceSaving implements Serializable {
    final int capacity;
    int size;
    final long[] key, cnt, err;
    private final int[] ebkt, eprev, enext;
    private final long[] bcnt;
    private final int[] bfirst, blast, bprev, bnext, free;
    private int top, minb = -1;
    private final LongIntTable index;

    public SpaceSaving(int capacity) {
        this.capacity = capacity;
        key = new long[capacity];
        cnt = new long[capacity];
        err = new long[capacity];
        ebkt = new int[capacity];
        eprev = new int[capacity];
        enext = new int[capacity];
        bcnt = new long[capacity];
        bfirst = new int[capacity];
        blast = new int[capacity];
        bprev = new int[capacity];
        bnext = new int[capacity];
        free = new int[capacity];
        for (int i = 0; i < capacity; i++) free[i] = capacity - 1 - i;
        top = capacity;
        index = new LongIntTable(capacity);
    }

    /** A bucket of count c linked after bucket {@code after} (-1: first). */
    private int newBucket(long c, int after) {
        int b = free[--top];
        bcnt[b] = c;
        bfirst[b] = -1;
        blast[b] = -1;
        int nxt;
        if (after < 0) {
            nxt = minb;
            minb = b;
        } else {
            nxt = bnext[after];
            bnext[after] = b;
        }
        bprev[b] = after;
        bnext[b] = nxt;
        if (nxt >= 0) bprev[nxt] = b;
        return b;
    }

    private void append(int b, int x) {
        int last = blast[b];
        eprev[x] = last;
        enext[x] = -1;
        if (last >= 0) enext[last] = x;
        else bfirst[b] = x;
        blast[b] = x;
        ebkt[x] = b;
    }

    private void increment(int x) {
        int b = ebkt[x];
        long c = bcnt[b];
        int nb = bnext[b];
        cnt[x] = c + 1;
        int target;
        if (nb >= 0 && bcnt[nb] == c + 1) target = nb;
        else if (bfirst[b] == x && blast[b] == x) {
            bcnt[b] = c + 1;  // alone in its bucket: the bucket moves up
            return;
        } else target = newBucket(c + 1, b);
        int p = eprev[x], q = enext[x];
        if (p >= 0) enext[p] = q;
        else bfirst[b] = q;
        if (q >= 0) eprev[q] = p;
        else blast[b] = p;
        if (bfirst[b] < 0) {  // b is empty: unlink and free it
            int bp = bprev[b], bn = bnext[b];
            if (bp >= 0) bnext[bp] = bn;
            else minb = bn;
            if (bn >= 0) bprev[bn] = bp;
            free[top++] = b;
        }
        append(target, x);
    }

    /** SS1-SS7: offer key k; returns its slot (its count and err after the update). */
    public int offer(long k) {
        int slot = index.get(k);
        if (slot >= 0) {
            increment(slot);
            return slot;
        }
        if (size < capacity) {
            slot = size++;
            key[slot] = k;
            cnt[slot] = 1;
            err[slot] = 0;
            index.put(k, slot);
            int target = minb >= 0 && bcnt[minb] == 1 ? minb : newBucket(1, -1);
            append(target, slot);
            return slot;
        }
        slot = bfirst[minb];
        long c = cnt[slot];
        index.remove(key[slot]);
        key[slot] = k;
        err[slot] = c;
        index.put(k, slot);
        increment(slot);
        return slot;
    }

    /** An open-addressing table from key to slot: linear probing, backward-shift deletion, at most half full. */
    static final class LongIntTable implements Serializable {
        private final long[] keys;
        private final int[] vals;  // slot + 1; 0 = empty
        private final int mask;

        LongIntTable(int entries) {
            int size = Integer.highestOneBit(Math.max(2, entries) * 2 - 1) << 1;
            keys = new long[size];
            vals = new int[size];
            mask = size - 1;
        }

        private int home(long k) { return (int) (Hashing.mix64(k) >>> 33) & mask; }

        int get(long k) {
            for (int i = home(k); ; i = (i + 1) & mask) {
                if (vals[i] == 0) return -1;
                if (keys[i] == k) return vals[i] - 1;
            }
        }

        void put(long k, int v) {
            int i = home(k);
            while (vals[i] != 0 && keys[i] != k) i = (i + 1) & mask;
            keys[i] = k;
            vals[i] = v + 1;
        }

        void remove(long k) {
            int i = home(k);
            while (vals[i] != 0 && keys[i] != k) i = (i + 1) & mask;
            if (vals[i] == 0) return;
            vals[i] = 0;
            for (int j = (i + 1) & mask; vals[j] != 0; j = (j + 1) & mask) {  // shift the cluster back
                int h = home(keys[j]);
                // j's entry may move to the hole i when its home does not lie cyclically in (i, j]
                if (((j - h) & mask) >= ((j - i) & mask)) {
                    keys[i] = keys[j];
                    vals[i] = vals[j];
                    vals[j] = 0;
                    i = j;
                }
            }
        }
    }
}
