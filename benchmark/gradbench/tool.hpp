#pragma once
// tad's tool for GradBench (github gradbench/gradbench): the command-line interface GradBench's
// C++ driver (python/gradbench/gradbench/cpp.py) expects of a tool's module binary,
//
//   bin/MODULE INPUT.json FUNCTION
//
// which reads the eval's input (JSON, with "min_runs" and "min_seconds"), runs FUNCTION at least
// min_runs times and for at least min_seconds, and prints the output as JSON on its first line,
// then one timing per line: {"name": "prepare", ...} once and {"name": "evaluate", ...} per run.
// Written for tad from GradBench's protocol description (its CONTRIBUTING.md); nothing of
// GradBench's code is in it. doc/benchmarks.md, "GradBench", says how to run the evals.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tad_gradbench {

using json = nlohmann::json;

/// A function of a module: `prepare(input)` builds what it needs once (untimed but reported as
/// "prepare"), `run(state)` is the timed call, `output(state)` the JSON of its result.
template <class Prepare, class Run, class Output>
int measure(const json& input, Prepare prepare, Run run, Output output) {
  using clock = std::chrono::steady_clock;
  const int min_runs = input.contains("min_runs") ? input["min_runs"].get<int>() : 1;
  const double min_seconds = input.contains("min_seconds") ? input["min_seconds"].get<double>() : 0.0;
  const auto p0 = clock::now();
  auto state = prepare(input);
  const auto p1 = clock::now();
  std::vector<long long> times;
  double elapsed = 0;
  for (int i = 0; i < min_runs || elapsed < min_seconds; ++i) {
    const auto t0 = clock::now();
    run(*state);
    const auto t1 = clock::now();
    const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    times.push_back(ns);
    elapsed += static_cast<double>(ns) * 1e-9;
  }
  std::cout << output(*state).dump() << '\n';
  std::cout << json{{"name", "prepare"}, {"nanoseconds", std::chrono::duration_cast<std::chrono::nanoseconds>(p1 - p0).count()}}.dump()
            << '\n';
  for (long long t : times) std::cout << json{{"name", "evaluate"}, {"nanoseconds", t}}.dump() << '\n';
  return 0;
}

/// main(): dispatches FUNCTION to one of `functions` with the parsed input file.
inline int main_of(int argc, char** argv, const std::map<std::string, std::function<int(const json&)>>& functions) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s INPUT.json FUNCTION\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
    return 2;
  }
  const json input = json::parse(in);
  const auto f = functions.find(argv[2]);
  if (f == functions.end()) {
    std::fprintf(stderr, "%s: unknown function %s\n", argv[0], argv[2]);
    return 2;
  }
  return f->second(input);
}

/// main() of a module of two functions, a value (`value_name`: "primal", "objective") and its
/// derivative (`derivative_name`: "gradient", "jacobian"): `State(input)` prepares;
/// `State::primal()` and `State::gradient()` are the timed calls, `State::primal_output()` and
/// `State::gradient_output()` their results as JSON.
template <class State>
int serve(int argc, char** argv, const char* value_name, const char* derivative_name) {
  const auto prepare = [](const json& in) { return std::make_unique<State>(in); };
  return main_of(argc, argv,
                 {{value_name,
                   [&](const json& in) {
                     return measure(in, prepare, [](State& s) { s.primal(); }, [](const State& s) { return s.primal_output(); });
                   }},
                  {derivative_name, [&](const json& in) {
                     return measure(in, prepare, [](State& s) { s.gradient(); },
                                    [](const State& s) { return s.gradient_output(); });
                   }}});
}

}  // namespace tad_gradbench
