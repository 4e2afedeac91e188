// Gradient surgery inside and around a scan, against backpropagation through time written by
// hand with the rule applied where TensorFlow applies it (test/scan/common.hpp): each rule once
// per node, on the adjoint summed over that node's uses.
//  - clip_gradient, scale_gradient and stop_gradient on the carry: per step, on its adjoint.
//  - The carry used twice in the body (the product and a residual term) through one clipped
//    node: the clip runs once per step on the sum of both uses' adjoints.
//  - Every carry (a per-step output) used twice by the loss through one clipped node: once, on
//    the summed adjoint.
//  - reverse_gradient on the scan's value: every gradient negated.
// The reference is checked against central differences where it is a derivative.
#include "scan/common.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace tad_test::scan;

namespace {

std::string name(const rnn& p, const char* what) {
  return std::string(what) + ": H " + std::to_string(p.H) + " T " + std::to_string(p.T) + " B " +
         std::to_string(p.B) + (p.every ? " every" : " last");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scan_surgery)

BOOST_AUTO_TEST_CASE_TEMPLATE(clip_gradient_on_the_carry_clips_each_steps_adjoint, T, tad_test::reals) {
  for (const std::size_t h : {1u, 5u, 8u, 17u}) {
    for (const std::size_t batch : {0u, 3u}) {
      rnn p(h, 3, 6, batch);
      p.clip = 0.05;
      const auto make = [c = p.clip](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
        const auto step = [=](auto hp, auto x) {
          return tad::tanh(tad::matmul(tad::clip_gradient(hp, T(-c), T(c)), W) + tad::matmul(x, U) + b);
        };
        return tad::scan(step, h0, X, tad::every_step);
      };
      p.every = true;
      expect_matches<T>(run<T>(p, make), p, name(p, "clip"));
      // The clip is active: without it the gradients differ.
      rnn q = p;
      q.clip = 0;
      BOOST_TEST(std::abs(q.bptt().h0[0] - p.bptt().h0[0]) > 1e-6);
    }
  }
}

// (scale on a vector carry, stop on a matrix one: each carry kind's code is tested by the clip
// above, and one program fewer per type saves compile time.)
BOOST_AUTO_TEST_CASE_TEMPLATE(scale_gradient_and_stop_gradient_on_the_carry, T, tad_test::reals) {
  {
    rnn p(7, 2, 5, 0);
    p.scale = -0.5;
    const auto scaled = [](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
      const auto step = [=](auto hp, auto x) {
        return tad::tanh(tad::matmul(tad::scale_gradient(hp, T(-0.5)), W) + tad::matmul(x, U) + b);
      };
      return tad::scan(step, h0, X);
    };
    expect_matches<T>(run_on<T, carry::vector>(p, scaled), p, name(p, "scale"));
  }
  {
    // stop_gradient on the carry: truncated backpropagation through one step.
    rnn q(7, 2, 5, 2);
    q.stop = true;
    const auto stopped = [](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
      const auto step = [=](auto hp, auto x) {
        return tad::tanh(tad::matmul(tad::stop_gradient(hp), W) + tad::matmul(x, U) + b);
      };
      return tad::scan(step, h0, X, tad::every_step);
    };
    q.every = true;
    expect_matches<T>(run_on<T, carry::matrix>(q, stopped), q, name(q, "stop"));
  }
}

// The carry used twice in the body through one clipped node: h_{t+1} = tanh(c W + x U + b) + c / 2
// with c = clip_gradient(h_t). The clip's rule runs once per step on the sum of the two uses'
// adjoints (the reference), not on each use's (which differs here).
BOOST_AUTO_TEST_CASE_TEMPLATE(a_clipped_carry_used_twice_in_the_body_is_one_node, T, tad_test::reals) {
  for (const std::size_t batch : {0u, 4u}) {
    rnn p(6, 3, 5, batch);
    p.skip = 0.5;
    p.clip = 0.1;
    // The reference is a derivative without the clip:
    rnn d = p;
    d.clip = 0;
    const auto g = d.bptt();
    expect_all_close(g.w, differences(d, d.w), 1e-7, "residual net dW");
    expect_all_close(g.h0, differences(d, d.h0), 1e-7, "residual net dh0");
    const auto make = [c = p.clip](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
      const auto step = [=](auto hp, auto x) {
        // One node used twice: named (a let), as anywhere in tad.
        const auto hc = tad::let<"hc">(tad::clip_gradient(hp, T(-c), T(c)));
        return tad::tanh(tad::matmul(hc, W) + tad::matmul(x, U) + b) + T(0.5) * hc;
      };
      return tad::scan(step, h0, X);
    };
    expect_matches<T>(run<T>(p, make), p, name(p, "clip of two uses"));
  }
}

// Every carry read twice by the loss through one clipped node: the clip once, on the sum.
BOOST_AUTO_TEST_CASE_TEMPLATE(every_carry_used_twice_through_one_clip, T, tad_test::reals) {
  {
    rnn p(5, 2, 4, 3);
    p.every = true;
    p.out_lin = 0.5;
    p.out_clip = 0.4;
    const auto make = [](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
      const auto step = [=](auto hp, auto x) { return tad::tanh(tad::matmul(hp, W) + tad::matmul(x, U) + b); };
      return tad::let<"s">(tad::clip_gradient(tad::scan(step, h0, X, tad::every_step), T(-0.4), T(0.4)));
    };
    const auto loss = [&](const auto& s) { return tad::sum(tad::square(s - T(p.target))) + T(0.5) * tad::sum(s); };
    expect_matches<T>(run_on<T, carry::matrix>(p, make, loss), p, name(p, "output clip"));
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(reverse_gradient_on_the_scans_value_negates_every_gradient, T, tad_test::reals) {
  rnn p(4, 2, 3, 2);
  const auto make = [](const auto& W, const auto& U, const auto& b, const auto& h0, const auto& X) {
    const auto step = [=](auto hp, auto x) { return tad::tanh(tad::matmul(hp, W) + tad::matmul(x, U) + b); };
    return tad::reverse_gradient(tad::scan(step, h0, X), T(1));
  };
  result got = run_on<T, carry::matrix>(p, make);
  for (auto* v : {&got.g.w, &got.g.u, &got.g.b, &got.g.h0, &got.g.xs})
    for (double& x : *v) x = -x;
  expect_matches<T>(got, p, "reverse_gradient");
}

BOOST_AUTO_TEST_SUITE_END()
