// scan_options: truncated backpropagation through time against BPTT written by hand with the
// cut, and checkpointing, whose gradients must equal the stored run's bit for bit.
#include "scan/common.hpp"

#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>

using namespace tad_test::scan;

namespace {

const auto step_of = [](const auto& W, const auto& U, const auto& b) {
  return [=](auto h, auto x) { return tad::tanh(tad::matmul(h, W) + tad::matmul(x, U) + b); };
};

std::string name(const rnn& p, std::size_t k) {
  return "H " + std::to_string(p.H) + " T " + std::to_string(p.T) + " B " + std::to_string(p.B) + " k " +
         std::to_string(k);
}

void expect_equal(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
  BOOST_TEST(a.size() == b.size(), what);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) bad += a[i] != b[i];  // bit for bit (no NaN here)
  BOOST_TEST(bad == 0u, what << ": " << bad << " elements differ");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scan_options)

BOOST_AUTO_TEST_CASE_TEMPLATE(truncated_backpropagation_through_time, T, tad_test::reals) {
  for (const std::size_t batch : {0u, 3u}) {
    for (const std::size_t k : {1u, 2u, 3u, 7u}) {
      for (const bool all : {false, true}) {
        rnn p(5, 2, 7, batch);
        p.truncate = k;
        p.every = all;
        const tad::scan_options o{.truncate = k};
        if (all) {
          const auto make = [o](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
            return tad::scan(step_of(W, U, b), h0, X, tad::every_step, o);
          };
          expect_matches<T>(run<T>(p, make), p, name(p, k) + " every, truncated");
        } else {
          const auto make = [o](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
            return tad::scan(step_of(W, U, b), h0, X, o);
          };
          expect_matches<T>(run<T>(p, make), p, name(p, k) + " truncated");
        }
      }
    }
  }
  // The cut is real: truncated at 2, h0 gets the first block's gradient only, not the whole one.
  rnn p(5, 2, 7, 0), q = p;
  q.truncate = 2;
  BOOST_TEST(std::abs(p.bptt().h0[0] - q.bptt().h0[0]) > 1e-9);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(checkpointed_gradients_equal_the_stored_runs_bit_for_bit, T, tad_test::reals) {
  const auto stored_run = [](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
    return tad::scan(step_of(W, U, b), h0, X);
  };
  for (const std::size_t steps : {0u, 1u, 2u, 7u, 16u, 1000u}) {
    for (const std::size_t batch : {0u, 3u}) {
      rnn p(5, 2, steps, batch);
      const result want = run<T>(p, stored_run);
      for (const std::size_t k : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{16},
                                  std::size_t{2000}, tad::scan_options::sqrt_steps}) {
        const tad::scan_options o{.checkpoint = k};
        const auto make = [o](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
          return tad::scan(step_of(W, U, b), h0, X, o);
        };
        const result got = run<T>(p, make);
        const std::string what = name(p, k);
        BOOST_TEST(got.value == want.value, what << " value");
        expect_equal(got.g.w, want.g.w, what + " dW");
        expect_equal(got.g.u, want.g.u, what + " dU");
        expect_equal(got.g.b, want.g.b, what + " db");
        expect_equal(got.g.h0, want.g.h0, what + " dh0");
        expect_equal(got.g.xs, want.g.xs, what + " dX");
      }
      expect_matches<T>(want, p, name(p, 0));
    }
  }
}

BOOST_AUTO_TEST_CASE(checkpointing_with_every_step_is_refused) {
  std::vector<double> h(3, 0.0), x(4 * 3, 0.5);
  const auto h0 = tad::var<"h0">(h.data(), 3);
  const auto X = tad::constant(x.data(), 4, 3);
  tad_test::expect_message<std::invalid_argument>(
      [&] {
        (void)tad::scan([](auto c, auto xt) { return tad::tanh(c + xt); }, h0, X, tad::every_step,
                        tad::scan_options{.checkpoint = 2});
      },
      "tad::scan(step, h0, xs, every_step, options): checkpointing keeps only some carries, and with every_step "
      "every carry is the scan's value");
}

BOOST_AUTO_TEST_SUITE_END()
