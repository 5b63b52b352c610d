"""Independent reference for src/stats/bootstrap.rs's fixed-seed test: SplitMix64,
Lemire's bounded draw, resampling, the median, and NumPy's linear quantile, written
again from their definitions in Python. Prints (point, lower, upper)."""

import numpy as np

M = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.s = seed & M

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        return z ^ (z >> 31)

    def below(self, n):
        m = self.next() * n
        if (m & M) < n:
            t = ((1 << 64) - n) % n
            while (m & M) < t:
                m = self.next() * n
        return m >> 64


def median_ci(samples, seed, resamples, level):
    rng = SplitMix64(seed)
    n = len(samples)
    stats = [float(np.median([samples[rng.below(n)] for _ in range(n)])) for _ in range(resamples)]
    a = (1 - level) / 2
    return float(np.median(samples)), float(np.quantile(stats, a)), float(np.quantile(stats, 1 - a))


if __name__ == "__main__":
    s = [100.0 + ((i * 37) % 23) for i in range(50)]
    print(median_ci(s, 2024, 2000, 0.95))
