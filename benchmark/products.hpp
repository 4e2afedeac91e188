#pragma once
/// The SQ workload (benchmark/products.cpp: the gradient of sum(square(A B - C)) with respect to
/// A and B, N x N floats), shared by bench.products and bench.icount
/// (benchmark/icount/icount.cpp): the data, tad's expression, the baseline by hand with Eigen and
/// the check of tad against it, so both binaries time and count the same code on the same data.
#include "harness.hpp"

#include <tad/linalg.hpp>

#include <Eigen/Core>

#include <cstddef>
#include <tuple>
#include <vector>

namespace bench::sq {

using rm = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A, B, C (n x n, row-major, the same for a given n) and the gradient buffers of A and B.
struct data {
  std::size_t n;
  std::vector<float> a = bench::normal<float>(n * n, 0, 1, 1), b = bench::normal<float>(n * n, 0, 1, 2);
  std::vector<float> c = bench::normal<float>(n * n, 0, 1, 3);
  std::vector<float> ga = std::vector<float>(n * n), gb = std::vector<float>(n * n);
};

/// The hand-written value and gradients: the three GEMMs and one Eigen array pass.
struct eigen_sq {
  data& d;
  rm r{static_cast<Eigen::Index>(d.n), static_cast<Eigen::Index>(d.n)};
  float step() {
    const auto n = static_cast<Eigen::Index>(d.n);
    const Eigen::Map<const rm> a(d.a.data(), n, n), b(d.b.data(), n, n), c(d.c.data(), n, n);
    Eigen::Map<rm> ga(d.ga.data(), n, n), gb(d.gb.data(), n, n);
    r.noalias() = a * b;
    r -= c;
    const float loss = r.squaredNorm();
    r *= 2.0f;
    ga.noalias() = r * b.transpose();
    gb.noalias() = a.transpose() * r;
    return loss;
  }
};

/// tad's loss over d's data and its two variables: (loss, A, B).
inline auto tad_sq(data& d) {
  const auto A = tad::var<"A">(d.a.data(), d.n, d.n);
  const auto B = tad::var<"B">(d.b.data(), d.n, d.n);
  const auto C = tad::constant(d.c.data(), d.n, d.n);
  return std::tuple{tad::sum(tad::square(tad::matmul(A, B) - C)), A, B};
}

/// tad's value and gradients must equal the baseline's (aborts otherwise): bench.products checks
/// before it times, bench.icount before it counts.
inline void check(std::size_t n) {
  data x{n}, y{n};
  eigen_sq e{x};
  const float want = e.step();
  auto [loss, A, B] = tad_sq(y);
  const tad::program p(loss);
  const float got = p.grad_into(tad::wrt(A, y.ga), tad::wrt(B, y.gb));
  bench::expect_close("SQ loss", got, want, 1e-3);
  bench::expect_close<float>("SQ dA", y.ga, x.ga, 1e-3, 10);
  bench::expect_close<float>("SQ dB", y.gb, x.gb, 1e-3, 10);
}

}  // namespace bench::sq
