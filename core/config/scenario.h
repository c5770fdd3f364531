// A run's scenario: the what-ifs, demonstrations and remedies laid over plain training (a
// simulated straggler, a simulated link, balanced shares and their replay, gradient
// accumulation, learning-rate warm-up, a compressed all-reduce, overlap in buckets, the input
// pipeline and its what-if costs), one typed value that the
// trainer, the predictor, the window and the record carry whole. Each field is one row of the
// option table (config/train_options.cpp: its flag, text, help, what it does to a run, how it
// reads to people), which derives the command lines, the record, the CSV, the digest and the
// labels; what a field does lives in its own code (backends/straggler_engine,
// comm/simulated_link, trainer/share_balancer) and the predictor's model of it
// (experiment/scaling_model). Adding a field: a member here, a row in the table, its own code.
#pragma once
#include <string>
#include <string_view>

namespace mb {

// One replica computes `factor` times slower (it sleeps after its real compute): the others
// wait for it at every all-reduce. CPU replicas only.
struct Straggler {
  int replica = -1;      // < 0: off
  double factor = 1.0;   // >= 1
  bool on() const { return replica >= 0; }
  bool operator==(const Straggler&) const = default;
};

// Every gradient all-reduce lasts at least what a flat ring over links of `gbit` Gbit/s and
// `latency_us` microseconds per hop would take (comm/simulated_link.h). CPU replicas only.
struct SimulatedLink {
  double gbit = 0;         // > 0; 0: off, the machine's own exchange
  double latency_us = 0;   // per hop
  bool on() const { return gbit > 0; }
  bool operator==(const SimulatedLink&) const = default;
};

// What the gradient all-reduce puts on the wire (--allreduce-dtype): FP32, or a 16-bit format
// that halves the bytes (comm/compressed_all_reduce.h). Sums are FP32 in rank order whatever
// travels, so every replica still receives the same bits.
enum class WireDtype { Fp32, Bf16, Fp16 };
inline std::string_view wire_name(WireDtype w) {
  return w == WireDtype::Bf16 ? "bf16" : w == WireDtype::Fp16 ? "fp16" : "fp32";
}

// The input pipeline (trainer/input_pipeline.h): loader threads prepare each replica's coming
// batches, each up to `prefetch` steps ahead of it (loaders x prefetch in flight, as DataLoader). The data is resident (decoded once), so
// without an input cost the loaders would have nothing to do and no pipeline runs; the costs
// are what-ifs per image, labelled simulated: a latency (I/O wait, as a slow disk or a network
// file system adds: more loaders overlap it) and CPU work (as decoding and augmenting: on CPU
// replicas it runs on the replicas' own cores, so more loaders do not help).
struct InputSettings {
  double latency_ms = 0;   // simulated I/O wait per image
  double cpu_ms = 0;       // simulated CPU work per image
  int loaders = 0;         // loader threads per replica (as DataLoader's workers per rank); 0: chosen
                           // from the cores the replicas leave, at least 1
  int prefetch = 2;        // steps each loader may prepare ahead of its replica (DataLoader's prefetch_factor)
  bool costs() const { return latency_ms > 0 || cpu_ms > 0; }
  bool operator==(const InputSettings&) const = default;
};

struct Scenario {
  Straggler straggler;
  SimulatedLink link;
  bool balance = false;        // balanced shares: each replica's share follows its measured speed
  std::string shares_from;     // replay the share changes of this run record (balanced, bit for bit)
  // Remedies for communication-bound training (trainer/replica_loop.cpp):
  int accumulate = 1;            // micro-batches per all-reduce and optimizer step (1: every batch)
  double lr_warmup_epochs = 0;   // gradual linear warm-up of the learning rate (Goyal et al. 2017)
  WireDtype allreduce_dtype = WireDtype::Fp32;   // compressed all-reduce: what the gradients travel as
  double bucket_mb = 0;          // overlap: the all-reduce in buckets of this many MB as backward fills them (0: off)
  int powersgd_rank = 0;         // PowerSGD: weight matrices travel as rank-r factors (comm/powersgd.h; 0: off)
  InputSettings input;           // loaders, prefetch and what-if input costs (trainer/input_pipeline.h)

  // Balanced shares, measured or replayed.
  bool balanced() const { return balance || !shares_from.empty(); }
  // A remedy for communication (accumulation, compression, PowerSGD, overlap); bare() is this scenario without
  // them: what "Bare vs remedy" runs first.
  bool comm_remedy() const {
    return accumulate > 1 || allreduce_dtype != WireDtype::Fp32 || bucket_mb > 0 || powersgd_rank > 0;
  }
  // The remedy fields, listed here once: take_remedy copies them from another scenario, remedy()
  // is this scenario's alone (over a default one: what a sweep's remedy point carries).
  void take_remedy(const Scenario& from) {
    accumulate = from.accumulate;
    allreduce_dtype = from.allreduce_dtype;
    bucket_mb = from.bucket_mb;
    powersgd_rank = from.powersgd_rank;
  }
  Scenario remedy() const {
    Scenario r;
    r.take_remedy(*this);
    return r;
  }
  Scenario bare() const {
    Scenario s = *this;
    s.take_remedy(Scenario{});
    return s;
  }
  bool operator==(const Scenario&) const = default;
};

// What a scenario field does to a run, which decides where such a run may stand in for another.
enum class ScenarioEffect {
  Simulated,   // times that are not this machine's (the math is unchanged): never a baseline
  Math,        // other values are computed (digests differ): never a baseline, nor compared as the same math
};

}  // namespace mb
