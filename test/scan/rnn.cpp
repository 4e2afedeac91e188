// tad::scan without surgery: a tanh recurrent net over T steps, its value and the gradients of
// every parameter, of h0 and of the inputs against backpropagation through time written by
// hand (itself checked against central differences), for a vector carry and a batch (a matrix
// carry), the last carry and every carry, float and double, at sizes around the SIMD widths,
// T = 0, 1, 2 and 1000.
#include "scan/common.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace tad_test::scan;

namespace {

const auto step_of = [](const auto& W, const auto& U, const auto& b) {
  return [=](auto h, auto x) { return tad::tanh(tad::matmul(h, W) + tad::matmul(x, U) + b); };
};
const auto last = [](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
  return tad::scan(step_of(W, U, b), h0, X);
};
const auto every = [](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
  return tad::scan(step_of(W, U, b), h0, X, tad::every_step);
};

std::string name(const rnn& p) {
  return "H " + std::to_string(p.H) + " D " + std::to_string(p.D) + " T " + std::to_string(p.T) + " B " +
         std::to_string(p.B) + (p.every ? " every" : " last");
}

template <class T>
void check(rnn p) {
  if (p.every) expect_matches<T>(run<T>(p, every), p, name(p));
  else expect_matches<T>(run<T>(p, last), p, name(p));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scan_rnn)

// The reference itself: its backpropagation against central differences of its forward.
BOOST_AUTO_TEST_CASE(the_hand_written_bptt_matches_central_differences) {
  for (const std::size_t batch : {0u, 3u}) {
    for (const bool all : {false, true}) {
      rnn p(4, 3, 5, batch);
      p.every = all;
      const auto g = p.bptt();
      const std::string what = name(p);
      expect_all_close(g.w, differences(p, p.w), 1e-7, what + " dW");
      expect_all_close(g.u, differences(p, p.u), 1e-7, what + " dU");
      expect_all_close(g.b, differences(p, p.b), 1e-7, what + " db");
      expect_all_close(g.h0, differences(p, p.h0), 1e-7, what + " dh0");
      expect_all_close(g.xs, differences(p, p.xs), 1e-7, what + " dX");
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_vector_carry_at_sizes_around_the_simd_width, T, tad_test::reals) {
  for (const std::size_t h : {1u, 3u, 4u, 5u, 7u, 8u, 9u, 15u, 16u, 17u}) {
    for (const bool all : {false, true}) {
      rnn p(h, 3, 4, 0);
      p.every = all;
      check<T>(p);
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_batch_of_sequences_as_a_matrix_carry, T, tad_test::reals) {
  for (const std::size_t h : {1u, 4u, 7u, 9u, 17u}) {
    for (const std::size_t batch : {1u, 2u, 5u, 8u}) {
      for (const bool all : {false, true}) {
        rnn p(h, 2, 3, batch);
        p.every = all;
        check<T>(p);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(no_step_one_step_two_steps_and_a_thousand, T, tad_test::reals) {
  for (const std::size_t steps : {0u, 1u, 2u, 1000u}) {
    for (const std::size_t batch : {0u, 3u}) {
      for (const bool all : {false, true}) {
        rnn p(5, 2, steps, batch);
        p.every = all;
        check<T>(p);
      }
    }
  }
}

// A per-step input of zero width (D = 0) and an empty carry (H = 0).
BOOST_AUTO_TEST_CASE_TEMPLATE(empty_inputs_and_an_empty_carry, T, tad_test::reals) {
  for (const std::size_t d : {0u, 2u}) {
    for (const std::size_t h : {0u, 3u}) {
      rnn p(h, d, 3, 0);
      check<T>(p);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
