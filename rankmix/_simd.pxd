# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Innermost loops compiled twice, for AVX2 and for any x86-64, the version that
runs chosen once when the module loads.

The package is compiled for the baseline of its platform (x86-64: two-lane SSE2),
so that a build runs on any machine. These few loops carry most of the
Gaussian kernels' time (a row's triangular product, a Cholesky factor's
rank-one update, a cluster's scatter, the sum of squares of the diagonal and
spherical likelihoods, four rows of it at a time, the collapsed predictive's
forward substitution of 16 rows at a time), and GCC and Clang can compile a
function for several targets and pick one at load time (``target_clones``, on
x86-64 Linux with glibc and GCC >= 8 or Clang >= 14; elsewhere the loops are
compiled once, for the baseline). The AVX2 version runs four lanes instead of
two.

Each loop multiplies and adds in the order written here (a sum of squares in
four running sums, combined in a fixed order), with no fused multiply-add
(AVX2 does not enable FMA, and setup.py compiles with ``-ffp-contract=off``,
so no target contracts): every version gives the same doubles to the last
bit, so the draws do not depend on which version the processor selects, as
they do not on the number of threads (``tests/test_gaussian.py`` checks the
selected version of each loop against NumPy's separate multiplies and adds,
and the sums of squares against their order, bit for bit; the loops over
several rows are checked against the one-row loops, bit for bit, in
``tests/test_subcluster.py`` and ``tests/test_gaussian.py``).
"""

cdef extern from *:
    """
    #include <stddef.h>
    #include <stdlib.h>   /* defines __GLIBC__ where the C library is glibc */
    #include <string.h>
    /* glibc resolves the clones at load time (an ifunc); musl, macOS and
       Windows have no ifunc, so they get one version. GCC 8 is the first to
       keep a static function's clones local. */
    #if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && \\
        !defined(__INTEL_COMPILER) && \\
        ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8) || \\
         (defined(__clang__) && __clang_major__ >= 14))
    #define RANKMIX_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define RANKMIX_CLONES
    #endif

    /* Each loop is written once (``_loop``, inlined wherever it is called),
       cloned for the targets (``_wide``), and called through a dispatcher that
       runs short loops inline: an ifunc call costs more than a few elements.
       Every path runs the same operations in the same order. */
    #define RANKMIX_SHORT 8

    /* z[k] += r0[k] y0 + r1[k] y1 + r2[k] y2 + r3[k] y3, added left to right. */
    static inline void rankmix_add4_loop(
            ptrdiff_t n, double* z, const double* r0, const double* r1,
            const double* r2, const double* r3, double y0, double y1, double y2,
            double y3) {
        ptrdiff_t k;
        double t;
        for (k = 0; k < n; k++) {
            t = z[k];
            t = t + r0[k] * y0;
            t = t + r1[k] * y1;
            t = t + r2[k] * y2;
            t = t + r3[k] * y3;
            z[k] = t;
        }
    }
    RANKMIX_CLONES static void rankmix_add4_wide(
            ptrdiff_t n, double* z, const double* r0, const double* r1,
            const double* r2, const double* r3, double y0, double y1, double y2,
            double y3) {
        rankmix_add4_loop(n, z, r0, r1, r2, r3, y0, y1, y2, y3);
    }
    static inline void rankmix_add4(
            ptrdiff_t n, double* z, const double* r0, const double* r1,
            const double* r2, const double* r3, double y0, double y1, double y2,
            double y3) {
        if (n < RANKMIX_SHORT)
            rankmix_add4_loop(n, z, r0, r1, r2, r3, y0, y1, y2, y3);
        else
            rankmix_add4_wide(n, z, r0, r1, r2, r3, y0, y1, y2, y3);
    }

    /* z[k] += r[k] y. */
    static inline void rankmix_add1_loop(
            ptrdiff_t n, double* z, const double* r, double y) {
        ptrdiff_t k;
        for (k = 0; k < n; k++)
            z[k] = z[k] + r[k] * y;
    }
    RANKMIX_CLONES static void rankmix_add1_wide(
            ptrdiff_t n, double* z, const double* r, double y) {
        rankmix_add1_loop(n, z, r, y);
    }
    static inline void rankmix_add1(ptrdiff_t n, double* z, const double* r, double y) {
        if (n < RANKMIX_SHORT)
            rankmix_add1_loop(n, z, r, y);
        else
            rankmix_add1_wide(n, z, r, y);
    }

    /* out[k] += y (x[k] - m[k]). */
    static inline void rankmix_add_scaled_difference_loop(
            ptrdiff_t n, double* out, const double* x, const double* m, double y) {
        ptrdiff_t k;
        for (k = 0; k < n; k++)
            out[k] = out[k] + y * (x[k] - m[k]);
    }
    RANKMIX_CLONES static void rankmix_add_scaled_difference_wide(
            ptrdiff_t n, double* out, const double* x, const double* m, double y) {
        rankmix_add_scaled_difference_loop(n, out, x, m, y);
    }
    static inline void rankmix_add_scaled_difference(
            ptrdiff_t n, double* out, const double* x, const double* m, double y) {
        if (n < RANKMIX_SHORT)
            rankmix_add_scaled_difference_loop(n, out, x, m, y);
        else
            rankmix_add_scaled_difference_wide(n, out, x, m, y);
    }

    /* sum over j < n of ((x[j] - m[j]) c[j])^2 (``scaled`` 0: of (x[j] -
       m[j])^2), in four running sums (j mod 4, each in increasing j), then (q0 +
       q1) + (q2 + q3): the order is written here, not left to the compiler, so
       it is the same for every target, and the four sums do not wait on each
       other as one would. ``scaled`` is a constant wherever this is inlined,
       so its branch is compiled out. */
    static inline double rankmix_squares_loop(
            ptrdiff_t n, const double* x, const double* m, const double* c,
            const int scaled) {
        ptrdiff_t j = 0;
        double q0 = 0.0, q1 = 0.0, q2 = 0.0, q3 = 0.0, y0, y1, y2, y3;
        for (; j + 4 <= n; j += 4) {
            y0 = x[j] - m[j];
            y1 = x[j + 1] - m[j + 1];
            y2 = x[j + 2] - m[j + 2];
            y3 = x[j + 3] - m[j + 3];
            if (scaled) {
                y0 = y0 * c[j];
                y1 = y1 * c[j + 1];
                y2 = y2 * c[j + 2];
                y3 = y3 * c[j + 3];
            }
            q0 = q0 + y0 * y0;
            q1 = q1 + y1 * y1;
            q2 = q2 + y2 * y2;
            q3 = q3 + y3 * y3;
        }
        for (; j < n; j++) {
            y0 = x[j] - m[j];
            if (scaled)
                y0 = y0 * c[j];
            q0 = q0 + y0 * y0;
        }
        return (q0 + q1) + (q2 + q3);
    }
    /* rankmix_squares_loop of four rows at once, x[r] into out[r], to the last
       bit what it gives for each row alone: one row's sum is a chain of adds
       that each wait on the one before (at d = 40 that wait, not the
       arithmetic, bounds a row), and four rows' chains run side by side.
       Written with GCC's vector extension (lane l is running sum l), as
       compilers vectorise the four rows' sixteen scalar sums with shuffles;
       elsewhere, the rows one after another. */
    #if defined(__GNUC__) || defined(__clang__)
    typedef double rankmix_v4 __attribute__((vector_size(32)));
    /* (an unaligned load; a function returning the vector would change the
       ABI where AVX is off) */
    #define RANKMIX_LOAD4(v, p) memcpy(&(v), (p), sizeof(v))
    #define RANKMIX_SQUARES_ROW4(q, xr) \\
        RANKMIX_LOAD4(y, xr + j); \\
        y = y - mj; \\
        if (scaled) \\
            y = y * cj; \\
        q = q + y * y;
    #define RANKMIX_SQUARES_TERM(q, xr) \\
        t = xr[j] - m[j]; \\
        if (scaled) \\
            t = t * c[j]; \\
        q[0] = q[0] + t * t;
    static inline void rankmix_squares4_loop(
            ptrdiff_t n, const double* const* x, const double* m, const double* c,
            double* out, const int scaled) {
        const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
        ptrdiff_t j = 0;
        double t;
        rankmix_v4 q0 = {0.0, 0.0, 0.0, 0.0}, q1 = q0, q2 = q0, q3 = q0;
        rankmix_v4 y, mj, cj = q0;
        for (; j + 4 <= n; j += 4) {
            RANKMIX_LOAD4(mj, m + j);
            if (scaled)
                RANKMIX_LOAD4(cj, c + j);
            RANKMIX_SQUARES_ROW4(q0, x0)
            RANKMIX_SQUARES_ROW4(q1, x1)
            RANKMIX_SQUARES_ROW4(q2, x2)
            RANKMIX_SQUARES_ROW4(q3, x3)
        }
        for (; j < n; j++) {
            RANKMIX_SQUARES_TERM(q0, x0)
            RANKMIX_SQUARES_TERM(q1, x1)
            RANKMIX_SQUARES_TERM(q2, x2)
            RANKMIX_SQUARES_TERM(q3, x3)
        }
        out[0] = (q0[0] + q0[1]) + (q0[2] + q0[3]);
        out[1] = (q1[0] + q1[1]) + (q1[2] + q1[3]);
        out[2] = (q2[0] + q2[1]) + (q2[2] + q2[3]);
        out[3] = (q3[0] + q3[1]) + (q3[2] + q3[3]);
    }
    #else
    static inline void rankmix_squares4_loop(
            ptrdiff_t n, const double* const* x, const double* m, const double* c,
            double* out, const int scaled) {
        int r;
        for (r = 0; r < 4; r++)
            out[r] = rankmix_squares_loop(n, x[r], m, c, scaled);
    }
    #endif
    RANKMIX_CLONES static void rankmix_scaled_squares4_wide(
            ptrdiff_t n, const double* const* x, const double* m, const double* c,
            double* out) {
        rankmix_squares4_loop(n, x, m, c, out, 1);
    }
    static inline void rankmix_scaled_squares4(
            ptrdiff_t n, const double* const* x, const double* m, const double* c,
            double* out) {
        if (n < RANKMIX_SHORT)
            rankmix_squares4_loop(n, x, m, c, out, 1);
        else
            rankmix_scaled_squares4_wide(n, x, m, c, out);
    }
    RANKMIX_CLONES static void rankmix_squared_distance4_wide(
            ptrdiff_t n, const double* const* x, const double* m, double* out) {
        rankmix_squares4_loop(n, x, m, NULL, out, 0);
    }
    static inline void rankmix_squared_distance4(
            ptrdiff_t n, const double* const* x, const double* m, double* out) {
        if (n < RANKMIX_SHORT)
            rankmix_squares4_loop(n, x, m, NULL, out, 0);
        else
            rankmix_squared_distance4_wide(n, x, m, out);
    }
    RANKMIX_CLONES static double rankmix_scaled_squares_wide(
            ptrdiff_t n, const double* x, const double* m, const double* c) {
        return rankmix_squares_loop(n, x, m, c, 1);
    }
    static inline double rankmix_scaled_squares(
            ptrdiff_t n, const double* x, const double* m, const double* c) {
        if (n < RANKMIX_SHORT)
            return rankmix_squares_loop(n, x, m, c, 1);
        return rankmix_scaled_squares_wide(n, x, m, c);
    }
    RANKMIX_CLONES static double rankmix_squared_distance_wide(
            ptrdiff_t n, const double* x, const double* m) {
        return rankmix_squares_loop(n, x, m, NULL, 0);
    }
    static inline double rankmix_squared_distance(
            ptrdiff_t n, const double* x, const double* m) {
        if (n < RANKMIX_SHORT)
            return rankmix_squares_loop(n, x, m, NULL, 0);
        return rankmix_squared_distance_wide(n, x, m);
    }

    /* z[k rb + r] += C[j d + k] y[j rb + r] for k <= j < d and r < m, j
       ascending: C^T y for m rows at once, y and z tables of stride rb. */
    RANKMIX_CLONES static void rankmix_lower_rows(
            ptrdiff_t d, ptrdiff_t m, ptrdiff_t rb, const double* C, const double* y,
            double* z) {
        ptrdiff_t j, k, r;
        double cjk;
        for (j = 0; j < d; j++)
            for (k = 0; k <= j; k++) {
                cjk = C[j * d + k];
                for (r = 0; r < m; r++)
                    z[k * rb + r] = z[k * rb + r] + cjk * y[j * rb + r];
            }
    }

    /* The forward substitution u = L^{-1} y of m rows at once, the rows
       innermost: L lower triangular by columns (column k at L + k d), inv[k] =
       1 / L[k, k], W a (d, rb) table with row r's y in column r (overwritten),
       q[r] <- |u_r|^2 summed as the entries come out. Column by column, four at
       a time: u_k = W[k] inv[k], then each later entry less the column's terms,
       in column order, as rankmix/_gaussian_kernels.pyx's full_quadratic does
       for one row (its triangle corner as w - c u, the rest as w + c (-u), the
       same doubles): each row's q is that row's to the last bit. m <= 16. */
    #define RANKMIX_FORWARD_CORNER(w, cc, z) \\
        for (r = 0; r < m; r++) \\
            w[r] = w[r] - cc * z[r];
    RANKMIX_CLONES static void rankmix_forward_rows(
            ptrdiff_t d, ptrdiff_t m, ptrdiff_t rb, const double* L,
            const double* inv, double* W, double* q) {
        ptrdiff_t j, k = 0, r;
        double z0[16], z1[16], z2[16], z3[16], t;
        const double *c0, *c1, *c2, *c3;
        double *w0, *w1, *w2, *w3, *wj;
        for (r = 0; r < m; r++)
            q[r] = 0.0;
        for (; k + 4 <= d; k += 4) {
            c0 = L + k * d;
            c1 = c0 + d;
            c2 = c1 + d;
            c3 = c2 + d;
            w0 = W + k * rb;
            w1 = w0 + rb;
            w2 = w1 + rb;
            w3 = w2 + rb;
            for (r = 0; r < m; r++) {
                z0[r] = w0[r] * inv[k];
                q[r] = q[r] + z0[r] * z0[r];
            }
            RANKMIX_FORWARD_CORNER(w1, c0[k + 1], z0)
            RANKMIX_FORWARD_CORNER(w2, c0[k + 2], z0)
            RANKMIX_FORWARD_CORNER(w3, c0[k + 3], z0)
            for (r = 0; r < m; r++) {
                z1[r] = w1[r] * inv[k + 1];
                q[r] = q[r] + z1[r] * z1[r];
            }
            RANKMIX_FORWARD_CORNER(w2, c1[k + 2], z1)
            RANKMIX_FORWARD_CORNER(w3, c1[k + 3], z1)
            for (r = 0; r < m; r++) {
                z2[r] = w2[r] * inv[k + 2];
                q[r] = q[r] + z2[r] * z2[r];
            }
            RANKMIX_FORWARD_CORNER(w3, c2[k + 3], z2)
            for (r = 0; r < m; r++) {
                z3[r] = w3[r] * inv[k + 3];
                q[r] = q[r] + z3[r] * z3[r];
                z0[r] = -z0[r];
                z1[r] = -z1[r];
                z2[r] = -z2[r];
                z3[r] = -z3[r];
            }
            for (j = k + 4; j < d; j++) {
                wj = W + j * rb;
                for (r = 0; r < m; r++) {
                    t = wj[r];
                    t = t + c0[j] * z0[r];
                    t = t + c1[j] * z1[r];
                    t = t + c2[j] * z2[r];
                    t = t + c3[j] * z3[r];
                    wj[r] = t;
                }
            }
        }
        for (; k < d; k++) {
            c0 = L + k * d;
            w0 = W + k * rb;
            for (r = 0; r < m; r++) {
                z0[r] = w0[r] * inv[k];
                q[r] = q[r] + z0[r] * z0[r];
                z0[r] = -z0[r];
            }
            for (j = k + 1; j < d; j++) {
                wj = W + j * rb;
                for (r = 0; r < m; r++)
                    wj[r] = wj[r] + c0[j] * z0[r];
            }
        }
    }

    /* One column of a Cholesky rank-one update (s_col = s) or downdate
       (s_col = -s): col[i] = (col[i] + s_col v[i]) / c, then
       v[i] = c v[i] - s col[i] with the new col[i]. */
    static inline void rankmix_rotate_loop(
            ptrdiff_t n, double* col, double* v, double c, double s_col, double s) {
        ptrdiff_t i;
        for (i = 0; i < n; i++) {
            col[i] = (col[i] + s_col * v[i]) / c;
            v[i] = c * v[i] - s * col[i];
        }
    }
    RANKMIX_CLONES static void rankmix_rotate_wide(
            ptrdiff_t n, double* col, double* v, double c, double s_col, double s) {
        rankmix_rotate_loop(n, col, v, c, s_col, s);
    }
    static inline void rankmix_rotate(
            ptrdiff_t n, double* col, double* v, double c, double s_col, double s) {
        if (n < RANKMIX_SHORT)
            rankmix_rotate_loop(n, col, v, c, s_col, s);
        else
            rankmix_rotate_wide(n, col, v, c, s_col, s);
    }
    """
    void add4 "rankmix_add4"(
        Py_ssize_t n, double* z, const double* r0, const double* r1, const double* r2,
        const double* r3, double y0, double y1, double y2, double y3) noexcept nogil
    void add1 "rankmix_add1"(
        Py_ssize_t n, double* z, const double* r, double y) noexcept nogil
    void add_scaled_difference "rankmix_add_scaled_difference"(
        Py_ssize_t n, double* out, const double* x, const double* m,
        double y) noexcept nogil
    void lower_rows "rankmix_lower_rows"(
        Py_ssize_t d, Py_ssize_t m, Py_ssize_t rb, const double* C, const double* y,
        double* z) noexcept nogil
    void forward_rows "rankmix_forward_rows"(
        Py_ssize_t d, Py_ssize_t m, Py_ssize_t rb, const double* L, const double* inv,
        double* W, double* q) noexcept nogil
    void rotate "rankmix_rotate"(
        Py_ssize_t n, double* col, double* v, double c, double s_col,
        double s) noexcept nogil
    double scaled_squares "rankmix_scaled_squares"(
        Py_ssize_t n, const double* x, const double* m, const double* c) noexcept nogil
    double squared_distance "rankmix_squared_distance"(
        Py_ssize_t n, const double* x, const double* m) noexcept nogil
    void scaled_squares4 "rankmix_scaled_squares4"(
        Py_ssize_t n, const double** x, const double* m, const double* c,
        double* out) noexcept nogil
    void squared_distance4 "rankmix_squared_distance4"(
        Py_ssize_t n, const double** x, const double* m, double* out) noexcept nogil


cdef inline void squares_rows(
        const double* X, Py_ssize_t d, const Py_ssize_t* points, Py_ssize_t first,
        Py_ssize_t m, const double* mu, const double* scale,
        double* out) noexcept nogil:
    """``out[r]`` <- ``scaled_squares`` (``scale`` not NULL) or ``squared_distance``
    of row p of X (d columns) and mu, for p = ``first + r`` (``points`` NULL) or
    ``points[r] - first``, r < m: four rows at a time, each row's value to the
    last bit what the one-row loop gives (the block likelihoods of the diagonal
    and spherical families)."""
    cdef Py_ssize_t r, t
    cdef const double* x[4]
    for r in range(0, m - 3, 4):
        for t in range(4):
            x[t] = X + (first + r + t if points == NULL else points[r + t] - first) * d
        if scale != NULL:
            scaled_squares4(d, x, mu, scale, out + r)
        else:
            squared_distance4(d, x, mu, out + r)
    for r in range(m - m % 4, m):
        x[0] = X + (first + r if points == NULL else points[r] - first) * d
        out[r] = (scaled_squares(d, x[0], mu, scale) if scale != NULL
                  else squared_distance(d, x[0], mu))
