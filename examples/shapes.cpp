// Matrix parameters (doc/shapes.md): calibrating a camera sensor whose every pixel has its own
// gain and offset, two 48 x 64 matrices, from three flat-field exposures, with Adam after
// tad::clip_by_global_norm; then a sensor with one offset per column, a vector broadcast across
// the rows, with an L2 penalty on each parameter; then one with an offset per row, a vector as a
// column (tad::as_column) broadcast across the columns; then 48 distributions over 64 classes
// fitted by a row-wise softmax cross-entropy, with soft labels, then with class indices too;
// then 64 distributions over the 48 rows, fitted down the columns (axis<0>); a column-major view.
// One line per epoch (loss, error of the fitted gain and offset against the truth); exits with 1
// unless the errors end below 0.01 (the noise allows ~0.004 for the gain, see below; a column or
// row offset: below 0.005), the fitted distributions are within 1e-3 of their targets (the loss
// within 1e-5 of its minimum, the targets' entropy) and the shape checks behave as documented.
#include <tad/tad.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr std::size_t rows = 48, cols = 64;

/// The root-mean-square difference of two ranges of one size (matrices or vectors).
template <class A>
double rms_difference(const A& a, const A& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (a.data()[i] - b.data()[i]) * (a.data()[i] - b.data()[i]);
  return std::sqrt(s / static_cast<double>(a.size()));
}

}  // namespace

int main() {
  // The truth, and three exposures at known light levels: m = gain * level + offset + noise.
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  tad::matrix<double> true_gain(rows, cols), true_offset(rows, cols);
  for (double& g : true_gain) g = 1.0 + 0.1 * normal(rng);
  for (double& o : true_offset) o = 0.05 * normal(rng);
  const double levels[3] = {0.2, 0.5, 0.9};
  tad::matrix<double> exposure[3] = {{rows, cols}, {rows, cols}, {rows, cols}};
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t i = 0; i < exposure[k].size(); ++i)
      exposure[k].data()[i] = true_gain.data()[i] * levels[k] + true_offset.data()[i] + 0.002 * normal(rng);

  // [calibration]
  // Two matrix parameters, viewed in place; start from gain 1, offset 0.
  tad::matrix<double> gain(rows, cols, 1.0), offset(rows, cols, 0.0);
  auto G = tad::var<"G">(gain);
  auto O = tad::var<"O">(offset);
  // One data term per exposure (elementwise over the whole sensor) and a weak pull of the gain
  // towards 1: every array in this loss is 48 x 64, so the gradient is one fused loop.
  auto fit = [&](double level, const tad::matrix<double>& measured) {
    return tad::mean(tad::square(G * level + O - tad::constant(measured)));
  };
  auto loss = fit(levels[0], exposure[0]) + fit(levels[1], exposure[1]) + fit(levels[2], exposure[2]) +
              1e-6 * tad::mean(tad::square(G - 1.0));
  tad::parameter_set params(G, O);  // matrices are parameters like any array
  tad::gradient_set grads(params);
  constexpr std::size_t epochs = 8, steps_per_epoch = 25;
  tad::adam opt(params, tad::cosine_decay{.init = 0.02, .total_steps = epochs * steps_per_epoch, .alpha = 0.01});
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    double l = 0;
    for (std::size_t step = 0; step < steps_per_epoch; ++step)
      l = tad::train_step(loss, params, grads, tad::clip_by_global_norm(1.0), opt);
    std::printf("epoch %zu  loss %.3e  gain rms error %.5f  offset rms error %.5f\n", epoch, l,
                rms_difference(gain, true_gain), rms_difference(offset, true_offset));
  }
  // [calibration]

  // Least squares per pixel over three levels estimates the gain to about
  // 0.002 / sqrt(sum (level - mean level)^2) = 0.004, the offset to about 0.003.
  bool ok = rms_difference(gain, true_gain) < 0.01 && rms_difference(offset, true_offset) < 0.01;
  if (!ok) std::printf("WRONG: the fitted gain or offset is off by more than 0.01\n");

  // A second sensor whose offsets are per column (one readout amplifier per column: column
  // fixed-pattern noise): the offset is a vector of 64, broadcast across the 48 rows.
  // Three exposures of the true gain plus offset(r, c) and noise.
  auto expose = [&](auto offset_at) {
    std::vector<tad::matrix<double>> m(3, tad::matrix<double>(rows, cols));
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) m[k](r, c) = true_gain(r, c) * levels[k] + offset_at(r, c) + 0.002 * normal(rng);
    return m;
  };
  std::vector<double> true_column_offset(cols);
  for (double& o : true_column_offset) o = 0.05 * normal(rng);
  const auto column_exposure = expose([&](std::size_t, std::size_t c) { return true_column_offset[c]; });

  // [columns]
  // A matrix gain and a vector offset: `G2 * level + o` adds o to every row (NumPy's rule: a
  // vector combined with a matrix is a row). Each parameter gets its own L2 penalty; the data
  // terms run in one loop over the rows, the penalty on o in a loop of its own.
  tad::matrix<double> gain2(rows, cols, 1.0);
  std::vector<double> column_offset(cols, 0.0);
  auto G2 = tad::var<"G2">(gain2);
  auto o = tad::var<"o">(column_offset);
  auto fit2 = [&](double level, const tad::matrix<double>& measured) {
    return tad::mean(tad::square(G2 * level + o - tad::constant(measured)));
  };
  auto loss2 = fit2(levels[0], column_exposure[0]) + fit2(levels[1], column_exposure[1]) +
               fit2(levels[2], column_exposure[2]) + 1e-6 * tad::mean(tad::square(G2 - 1.0)) +
               1e-6 * tad::squared_norm(o);
  tad::parameter_set params2(G2, o);
  tad::gradient_set grads2(params2);
  tad::adam opt2(params2, tad::cosine_decay{.init = 0.02, .total_steps = epochs * steps_per_epoch, .alpha = 0.01});
  for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
    double l = 0;
    for (std::size_t step = 0; step < steps_per_epoch; ++step)
      l = tad::train_step(loss2, params2, grads2, tad::clip_by_global_norm(1.0), opt2);
    std::printf("columns: epoch %zu  loss %.3e  gain rms error %.5f  column offset rms error %.5f\n", epoch, l,
                rms_difference(gain2, true_gain), rms_difference(column_offset, true_column_offset));
  }
  // [columns]
  // Each column offset is shared by 48 pixels: it is estimated far better than a pixel's.
  if (rms_difference(gain2, true_gain) >= 0.01 || rms_difference(column_offset, true_column_offset) >= 0.005) {
    std::printf("WRONG: the per-column fit is off (gain >= 0.01 or column offset >= 0.005)\n");
    ok = false;
  }

  // A third sensor whose offsets are per row (one dark level per readout line): the offset is a
  // vector of 48, a column broadcast across the 64 columns.
  std::vector<double> true_row_offset(rows);
  for (double& v : true_row_offset) v = 0.05 * normal(rng);
  const auto row_exposure = expose([&](std::size_t r, std::size_t) { return true_row_offset[r]; });

  // [rows]
  // `G3 * level + as_column(d)` adds d[r] to every element of row r (NumPy's d[:, None]); d's
  // gradient is summed along each row. The data terms are one loop over the rows again.
  tad::matrix<double> gain3(rows, cols, 1.0);
  std::vector<double> row_offset(rows, 0.0);
  auto G3 = tad::var<"G3">(gain3);
  auto d = tad::var<"d">(row_offset);
  auto fit3 = [&](double level, const tad::matrix<double>& measured) {
    return tad::mean(tad::square(G3 * level + tad::as_column(d) - tad::constant(measured)));
  };
  auto loss3 = fit3(levels[0], row_exposure[0]) + fit3(levels[1], row_exposure[1]) +
               fit3(levels[2], row_exposure[2]) + 1e-6 * tad::squared_norm(d);
  tad::parameter_set params3(G3, d);
  tad::gradient_set grads3(params3);
  tad::adam opt3(params3, tad::cosine_decay{.init = 0.02, .total_steps = epochs * steps_per_epoch, .alpha = 0.01});
  double l3 = 0;
  for (std::size_t step = 0; step < epochs * steps_per_epoch; ++step)
    l3 = tad::train_step(loss3, params3, grads3, tad::clip_by_global_norm(1.0), opt3);
  std::printf("rows: loss %.3e  gain rms error %.5f  row offset rms error %.5f\n", l3,
              rms_difference(gain3, true_gain), rms_difference(row_offset, true_row_offset));
  // [rows]
  if (rms_difference(gain3, true_gain) >= 0.01 || rms_difference(row_offset, true_row_offset) >= 0.005) {
    std::printf("WRONG: the per-row fit is off (gain >= 0.01 or row offset >= 0.005)\n");
    ok = false;
  }

  // Soft labels, one distribution over the 64 columns per row (a teacher's softmax at a high
  // temperature), and a student's scores for them, fitted from zero.
  tad::matrix<double> soft_labels(rows, cols), scores(rows, cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    double total = 0;
    for (std::size_t c = 0; c < cols; ++c) total += soft_labels(r, c) = std::exp(normal(rng));
    for (std::size_t c = 0; c < cols; ++c) soft_labels(r, c) /= total;
  }
  double entropy = 0;  // the smallest possible loss: the labels' mean entropy
  for (double p : soft_labels) entropy -= p * std::log(p) / static_cast<double>(rows);

  // [distributions]
  // softmax_cross_entropy of two matrices is one cross-entropy per row (TensorFlow's
  // softmax_cross_entropy_with_logits): logsumexp(S, axis<1>) - sum(P * S, axis<1>) for rows
  // that sum to 1. Its mean is smallest where each row of softmax(S) is that row of P. Each row
  // is swept while it is in L1: its maximum, its sum of exponentials, then its gradient terms.
  auto S = tad::var<"S">(scores);
  auto P = tad::constant(soft_labels);
  auto distillation = tad::mean(tad::softmax_cross_entropy(S, P));
  static_assert(tad::passes_v<decltype(distillation), decltype(S)> == 1);
  tad::parameter_set student(S);
  tad::gradient_set student_grads(student);
  tad::identity_transform no_transform;
  constexpr std::size_t distillation_steps = 300;
  tad::adam student_opt(student, tad::cosine_decay{.init = 0.1, .total_steps = distillation_steps, .alpha = 0.01});
  double distillation_loss = 0;
  for (std::size_t step = 0; step < distillation_steps; ++step)
    distillation_loss = tad::train_step(distillation, student, student_grads, no_transform, student_opt);
  // The student's distributions: softmax(S, axis<1>) is exp(S - logsumexp(S, axis<1>)) row by row.
  const tad::matrix<double> student_p = tad::value(tad::softmax(S, tad::axis<1>));
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) worst = std::max(worst, std::abs(student_p(r, c) - soft_labels(r, c)));
  std::printf("distillation: loss %.6f (the labels' entropy %.6f), largest probability error %.1e\n",
              distillation_loss, entropy, worst);
  // [distributions]
  if (!(distillation_loss - entropy < 1e-5 && worst < 1e-3)) {
    std::printf("WRONG: the student's distributions are not the soft labels\n");
    ok = false;
  }

  // Hard labels too: each row's most likely class under the soft labels.
  std::vector<int> hard_labels(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < cols; ++c) best = soft_labels(r, c) > soft_labels(r, best) ? c : best;
    hard_labels[r] = static_cast<int>(best);
  }

  // [labels]
  // With class indices, one per row, the cross-entropy is logsumexp(S, axis<1>) - pick(S, labels)
  // (PyTorch's cross_entropy with class indices). Distillation's usual loss mixes it with the
  // soft labels' cross-entropy; the mixture is smallest where softmax(S) is
  // 0.5 one_hot(labels) + 0.5 P, row by row.
  auto mixed = tad::mean(0.5 * tad::softmax_cross_entropy(S, hard_labels) + 0.5 * tad::softmax_cross_entropy(S, P));
  static_assert(tad::passes_v<decltype(mixed), decltype(S)> == 1);
  tad::adam mixed_opt(student, tad::cosine_decay{.init = 0.1, .total_steps = distillation_steps, .alpha = 0.01});
  for (std::size_t step = 0; step < distillation_steps; ++step)
    tad::train_step(mixed, student, student_grads, no_transform, mixed_opt);
  // [labels]
  const tad::matrix<double> mixed_p = tad::value(tad::softmax(S, tad::axis<1>));
  double mixed_worst = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double target = 0.5 * (static_cast<int>(c) == hard_labels[r] ? 1.0 : 0.0) + 0.5 * soft_labels(r, c);
      mixed_worst = std::max(mixed_worst, std::abs(mixed_p(r, c) - target));
    }
  std::printf("hard and soft labels: largest probability error %.1e\n", mixed_worst);
  if (!(mixed_worst < 1e-3)) {
    std::printf("WRONG: the student's distributions are not the mixed targets\n");
    ok = false;
  }

  // [softmax]
  // A loss on the probabilities themselves: the Brier score, the squared error of each row's
  // softmax against its soft labels. softmax(B, axis<1>) is a matrix expression: each row's
  // logsumexp is swept just before the row's own code reads it, in the same loop, and its
  // gradient, s * (dy - sum(dy * s, axis<1>)) per row, comes from the same sweeps backward.
  tad::matrix<double> brier_scores(rows, cols, 0.0);
  auto Bs = tad::var<"B">(brier_scores);
  auto brier = tad::sum(tad::square(tad::softmax(Bs, tad::axis<1>) - P)) / static_cast<double>(rows);
  static_assert(tad::passes_v<decltype(brier), decltype(Bs)> == 1);
  tad::parameter_set brier_student(Bs);
  tad::gradient_set brier_grads(brier_student);
  tad::adam brier_opt(brier_student, tad::cosine_decay{.init = 0.2, .total_steps = 600, .alpha = 0.01});
  for (std::size_t step = 0; step < 600; ++step) tad::train_step(brier, brier_student, brier_grads, no_transform, brier_opt);
  const tad::matrix<double> brier_p = tad::value(tad::softmax(Bs, tad::axis<1>));
  double brier_worst = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) brier_worst = std::max(brier_worst, std::abs(brier_p(r, c) - soft_labels(r, c)));
  std::printf("Brier score: %.2e, largest probability error %.1e\n", tad::value(brier), brier_worst);
  // [softmax]
  if (!(brier_worst < 2e-3)) {
    std::printf("WRONG: the Brier fit's distributions are not the soft labels\n");
    ok = false;
  }

  // Column distributions: each of the 64 columns of Q is a distribution over the 48 rows (a soft
  // assignment of each column to the rows).
  tad::matrix<double> column_labels(rows, cols);
  for (std::size_t c = 0; c < cols; ++c) {
    double total = 0;
    for (std::size_t r = 0; r < rows; ++r) total += column_labels(r, c) = std::exp(normal(rng));
    for (std::size_t r = 0; r < rows; ++r) column_labels(r, c) /= total;
  }

  // [axis0]
  // Down the columns: log_softmax(C, axis<0>) is C - logsumexp(C, axis<0>), each column's
  // logsumexp (one value per column) met by C as a row (NumPy's rule for a vector and a matrix).
  // The cross-entropy of each column against Q's, averaged over the columns, is smallest where
  // softmax(C, axis<0>) is Q. One loop over blocks of columns: each block's logsumexp swept down
  // its rows, then the loss terms and their gradients while the block is in cache.
  tad::matrix<double> column_scores(rows, cols, 0.0);
  auto Cs = tad::var<"C">(column_scores);
  auto Q = tad::constant(column_labels);
  auto column_ce = -tad::sum(Q * tad::log_softmax(Cs, tad::axis<0>)) / static_cast<double>(cols);
  static_assert(tad::passes_v<decltype(column_ce), decltype(Cs)> == 1);
  tad::parameter_set column_student(Cs);
  tad::gradient_set column_grads(column_student);
  tad::adam column_opt(column_student, tad::cosine_decay{.init = 0.1, .total_steps = distillation_steps, .alpha = 0.01});
  for (std::size_t step = 0; step < distillation_steps; ++step)
    tad::train_step(column_ce, column_student, column_grads, no_transform, column_opt);
  const tad::matrix<double> column_p = tad::value(tad::softmax(Cs, tad::axis<0>));
  // Each column's sum of probabilities: sum(P, axis<0>) is one value per column.
  const std::vector<double> column_sums = tad::value(tad::sum(tad::constant(column_p), tad::axis<0>));
  double column_worst = 0, sum_worst = 0;
  for (std::size_t i = 0; i < column_p.size(); ++i)
    column_worst = std::max(column_worst, std::abs(column_p.data()[i] - column_labels.data()[i]));
  for (double total : column_sums) sum_worst = std::max(sum_worst, std::abs(total - 1.0));
  std::printf("column distributions: largest probability error %.1e, column sums within %.1e of 1\n", column_worst,
              sum_worst);
  // [axis0]
  if (!(column_worst < 1e-3 && sum_worst < 1e-12 && column_sums.size() == cols)) {
    std::printf("WRONG: the column distributions are not Q's\n");
    ok = false;
  }

  // [row-let]
  // A let inside a reduction along the rows is one node per element of each row's sweeps. The
  // error e of a rough gain (every 7th pixel off by 1) is clipped by clip_gradient and used
  // twice; the clip runs once per element, on the sum of both adjoints, 2 e: an element off by 1
  // gets 0.05 (two unshared copies would clip their own shares, e each: 0.1), one off by less
  // than 0.025 keeps 2 e.
  tad::matrix<double> rough(rows, cols);
  for (std::size_t i = 0; i < rough.size(); ++i) rough.data()[i] = gain.data()[i] + (i % 7 == 0 ? 1.0 : 0.0);
  auto R = tad::var<"R">(rough);
  const auto e = tad::let<"e">(tad::clip_gradient(R - tad::constant(true_gain), -0.05, 0.05));
  auto row_loss = tad::sum(tad::sum(0.5 * tad::square(e) + 0.5 * tad::square(e), tad::axis<1>));
  static_assert(tad::passes_v<decltype(row_loss), decltype(R)> == 1);
  const auto [row_value, row_grad] = tad::grad(row_loss, R);
  double largest = 0;
  for (double g : row_grad) largest = std::max(largest, std::abs(g));
  std::printf("clipped row loss %.3f, largest gradient element %.3f\n", row_value, largest);
  // [row-let]
  for (std::size_t i = 0; i < rough.size(); ++i) {
    const double err = rough.data()[i] - true_gain.data()[i];
    const double want = std::min(std::max(2 * err, -0.05), 0.05);
    if (std::abs(row_grad.data()[i] - want) > 1e-12) {
      std::printf("WRONG: element %zu of the clipped row loss's gradient is %g, not %g\n", i, row_grad.data()[i], want);
      ok = false;
      break;
    }
  }

  // [column-major]
  {
  // The 2 x 3 matrix [[1, 2, 3], [4, 5, 6]] stored by columns.
  const std::vector<double> by_columns{1, 4, 2, 5, 3, 6};
  auto A = tad::var<"A">(tad::col_major(by_columns.data(), 2, 3));
  const std::vector<double> row_sums = tad::value(tad::sum(A, tad::axis<1>));  // {6, 15}
  auto [v, gA] = tad::grad(tad::sum(tad::square(A)), A);  // gA(r, c) == 2 A(r, c), row-major
  // [column-major]
    const tad::matrix<double> m{{1, 2, 3}, {4, 5, 6}};
    bool same = row_sums == std::vector<double>{6, 15} && v == 91.0 && gA.rows() == 2 && gA.cols() == 3;
    for (std::size_t r = 0; r < 2; ++r)
      for (std::size_t c = 0; c < 3; ++c) same = same && gA(r, c) == 2 * m(r, c);
    std::printf("column-major view: row sums %g %g, value %g\n", row_sums[0], row_sums[1], v);
    if (!same) std::printf("WRONG: the column-major view's row sums, value or gradient\n");
    ok = ok && same;
  }

  // [shape-error]
  // Matrices combined elementwise must have one shape: a 64 x 48 frame does not fit.
  tad::matrix<double> transposed(cols, rows);
  try {
    (void)tad::value(tad::mean(tad::square(G - tad::constant(transposed))));
  } catch (const tad::shape_error& error) {
    std::printf("%s\n", error.what());
  }
  // [shape-error]
  try {
    (void)tad::value(tad::mean(tad::square(G - tad::constant(transposed))));
    ok = false;
  } catch (const tad::shape_error& error) {
    ok = ok && std::string(error.what()) ==
                   "tad: matrices combined elementwise differ in shape: variable 'G' has shape 48 x 64, a constant "
                   "matrix (array 2 from the left) has shape 64 x 48";
  }
  if (!ok) std::printf("WRONG\n");
  return ok ? 0 : 1;
}
