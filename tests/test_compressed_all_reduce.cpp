// The compressed all-reduce (--allreduce-dtype): the 16-bit conversions against an oracle that
// searches the representable values (nearest, ties to the even code), the vector rounding
// against the scalar conversions on every SIMD target, and the exchange itself: every rank
// receives round(sum in rank order of round(x_r)) bit for bit, on threads and over a link,
// fp16's pre-scale keeps gradients that plain fp16 would flush to zero, and the wire carries
// half of FP32's bytes.
#include <QtTest>

#include <hwy/targets.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "comm/compressed_all_reduce.h"
#include "comm/hierarchical_communicator.h"
#include "comm/simulated_link.h"
#include "comm/wire_format.h"
#include "loopback_link.h"
#include "util/bandwidth.h"
#include "util/on_threads.h"
#include "util/random.h"

using namespace mb;

namespace {

using Comms = std::vector<std::unique_ptr<Communicator>>;

// The non-negative finite values of a 16-bit format, ascending, with their codes.
struct Grid {
  std::vector<double> value;
  std::vector<uint16_t> code;
};
Grid grid_of(WireDtype wire) {
  Grid g;
  for (uint32_t h = 0; h < 0x8000; ++h) {
    const float v = wire == WireDtype::Bf16 ? from_bf16(uint16_t(h)) : from_fp16(uint16_t(h));
    if (!std::isfinite(v)) break;   // the codes ascend with the values up to infinity
    g.value.push_back(v);
    g.code.push_back(uint16_t(h));
  }
  return g;
}

// Round to nearest, ties to the even code; beyond the largest value by half its spacing or
// more: infinity (IEEE's overflow under round-to-nearest).
uint16_t oracle(const Grid& g, float x) {
  const double a = std::fabs(double(x));
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const std::size_t top = g.value.size() - 1;
  const double overflow = g.value[top] + (g.value[top] - g.value[top - 1]) / 2;
  if (a >= overflow) return uint16_t(sign | (g.code[top] + 1));   // the infinity code follows
  const auto it = std::upper_bound(g.value.begin(), g.value.end(), a);
  const std::size_t hi = std::min<std::size_t>(top, std::size_t(it - g.value.begin()));
  const std::size_t lo = hi == 0 ? 0 : (g.value[hi] <= a ? hi : hi - 1);
  if (lo == hi || g.value[lo] == a) return uint16_t(sign | g.code[lo]);
  const double dl = a - g.value[lo], dh = g.value[hi] - a;
  const std::size_t pick = dl < dh ? lo : dh < dl ? hi : (g.code[lo] % 2 == 0 ? lo : hi);
  return uint16_t(sign | g.code[pick]);
}

uint16_t convert(WireDtype wire, float x) { return wire == WireDtype::Bf16 ? to_bf16(x) : to_fp16(x); }
float back(WireDtype wire, uint16_t h) { return wire == WireDtype::Bf16 ? from_bf16(h) : from_fp16(h); }

// Floats that test the rounding: every midpoint between neighbours and one float either side,
// and random values over the whole range of the format and below it.
std::vector<float> probes(const Grid& g) {
  std::vector<float> out;
  for (std::size_t i = 0; i + 1 < g.value.size(); i += 1 + i / 4096) {   // all of fp16's, bf16's sampled
    const float mid = static_cast<float>((g.value[i] + g.value[i + 1]) / 2);
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) out.push_back(x), out.push_back(-x);
  }
  SplitMix64 rng(5);
  for (int i = 0; i < 200000; ++i) {
    const int octave = int(rng.below(300)) - 150;
    out.push_back(static_cast<float>(std::ldexp(rng.next_unit() * 2 - 1, octave)));
  }
  return out;
}

std::vector<std::vector<float>> gradients(int ranks, std::size_t count, double scale, uint64_t seed) {
  std::vector<std::vector<float>> g(static_cast<std::size_t>(ranks), std::vector<float>(count, 0.0f));
  SplitMix64 rng(seed);
  for (auto& v : g)
    for (auto& x : v) x = static_cast<float>((rng.next_unit() * 2 - 1) * scale * std::ldexp(1.0, -int(rng.below(12))));
  return g;
}

float round_one(WireDtype wire, float x) { return back(wire, convert(wire, x)); }

}  // namespace

class TestCompressedAllReduce : public QObject {
  Q_OBJECT
 private slots:
  void conversions_round_to_nearest_even_data() {
    QTest::addColumn<int>("wire");
    QTest::addRow("bf16") << int(WireDtype::Bf16);
    QTest::addRow("fp16") << int(WireDtype::Fp16);
  }
  void conversions_round_to_nearest_even() {
    QFETCH(int, wire);
    const auto w = WireDtype(wire);
    const Grid g = grid_of(w);
    QVERIFY(g.value.size() > 30000);
    int wrong = 0;
    for (const float x : probes(g))
      if (convert(w, x) != oracle(g, x) && ++wrong <= 5) qWarning("%a -> %04x, want %04x", double(x), convert(w, x), oracle(g, x));
    QCOMPARE(wrong, 0);
    // Every code goes back and forth unchanged (NaNs stay NaNs).
    for (uint32_t h = 0; h <= 0xffff; ++h) {
      const float v = back(w, uint16_t(h));
      if (std::isnan(v)) QVERIFY(std::isnan(back(w, convert(w, v))));
      else QCOMPARE(convert(w, v), uint16_t(h));
    }
  }

  void fp16_edges() {
    QCOMPARE(to_fp16(65504.0f), uint16_t(0x7bff));
    QCOMPARE(to_fp16(65519.99f), uint16_t(0x7bff));
    QCOMPARE(to_fp16(65520.0f), uint16_t(0x7c00));   // the tie rounds to the even code: infinity
    QCOMPARE(to_fp16(0x1p-24f), uint16_t(0x0001));   // the smallest subnormal
    QCOMPARE(to_fp16(0x1p-25f), uint16_t(0x0000));   // its half: the tie goes to even zero
    QCOMPARE(to_fp16(-0.0f), uint16_t(0x8000));
    QCOMPARE(to_bf16(1.0f + 0x1p-8f), uint16_t(0x3f80));   // tie to even
    QCOMPARE(to_bf16(1.0f + 0x1p-7f + 0x1p-8f), uint16_t(0x3f82));
  }

  // The vector rounding is the scalar conversion there and back, bit for bit, on every target
  // this build dispatches to (lengths with tails after the last whole vector).
  void vector_rounding_is_the_scalar_one_on_every_target() {
    std::vector<float> values = probes(grid_of(WireDtype::Fp16));
    for (float x : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, 65536.0f, 1e30f, 0x1p-14f, 0x1p-15f, 0x1p-130f,
                    std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                    std::bit_cast<float>(0x7f800001u), std::numeric_limits<float>::max()})
      values.push_back(x);
    values.resize(values.size() / 64 * 64 + 13);
    const auto targets = hwy::SupportedAndGeneratedTargets();
    QVERIFY(!targets.empty());
    for (const int64_t target : targets) {
      hwy::SetSupportedTargetsForTest(target);
      for (const WireDtype w : {WireDtype::Bf16, WireDtype::Fp16}) {
        std::vector<float> got = values, want = values;
        round_to_wire(got, w);
        for (float& x : want) x = round_one(w, x);
        QVERIFY2(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0,
                 qPrintable(QString("%1 on %2").arg(wire_name(w).data()).arg(hwy::TargetName(target))));
      }
    }
    hwy::SetSupportedTargetsForTest(0);
  }

  void prescale_is_the_largest_safe_power_of_two() {
    QCOMPARE(fp16_prescale(1.0f, 1), 32768.0f);   // 1 x 2^15 <= 65504 < 1 x 2^16
    QCOMPARE(fp16_prescale(1.0f, 2), 16384.0f);   // 2 x 2^15 = 65536 would overflow
    QCOMPARE(fp16_prescale(65504.0f, 1), 1.0f);
    QCOMPARE(fp16_prescale(1e-9f, 4), std::ldexp(1.0f, 43));   // 4e-9 x 2^43 = 35184
    QCOMPARE(fp16_prescale(0.0f, 2), 1.0f);
    QCOMPARE(fp16_prescale(std::numeric_limits<float>::infinity(), 2), 1.0f);
    QCOMPARE(fp16_prescale(std::numeric_limits<float>::quiet_NaN(), 2), 1.0f);
  }

  // Every rank receives round(sum over ranks, in rank order, of round(scale x_r)) / scale, bit
  // for bit: on threads, and over a link with one replica per process (which packs 16 bits).
  void exchange_is_the_rounded_rank_order_sum_data() {
    QTest::addColumn<int>("wire");
    QTest::addColumn<int>("processes");
    QTest::addColumn<int>("threads");
    for (const WireDtype w : {WireDtype::Bf16, WireDtype::Fp16})
      for (auto [p, t] : {std::pair{1, 2}, {1, 3}, {2, 1}, {3, 1}})
        QTest::addRow("%s %dx%d", wire_name(w).data(), p, t) << int(w) << p << t;
  }
  void exchange_is_the_rounded_rank_order_sum() {
    QFETCH(int, wire);
    QFETCH(int, processes);
    QFETCH(int, threads);
    const auto w = WireDtype(wire);
    const int ranks = processes * threads;
    const std::size_t count = 4099;
    auto grads = gradients(ranks, count, 1e-2, 7);
    float largest = 0;
    for (const auto& g : grads)
      for (float x : g) largest = std::max(largest, std::fabs(x));
    const float scale = w == WireDtype::Fp16 ? fp16_prescale(largest, ranks) : 1.0f;
    std::vector<float> want(count);
    for (std::size_t i = 0; i < count; ++i) {
      float sum = round_one(w, grads[0][i] * scale);
      for (int r = 1; r < ranks; ++r) sum += round_one(w, grads[std::size_t(r)][i] * scale);
      want[i] = round_one(w, sum) * (1.0f / scale);
    }
    Comms comms = test::make_world(processes, threads);
    for (auto& c : comms) c = make_compressed_all_reduce(std::move(c), w);
    on_threads(ranks, [&](int r) { comms[std::size_t(r)]->all_reduce_sum(grads[std::size_t(r)].data(), count); });
    for (int r = 0; r < ranks; ++r)
      QVERIFY2(std::memcmp(grads[std::size_t(r)].data(), want.data(), count * sizeof(float)) == 0,
               qPrintable(QString("rank %1").arg(r)));
  }

  // Several replicas per process: their partial sums travel in FP32 (not representable in 16
  // bits); every rank still receives the same bits.
  void hierarchical_ranks_agree() {
    const int processes = 2, threads = 2, ranks = 4;
    const std::size_t count = 1000;
    auto grads = gradients(ranks, count, 1.0, 9);
    Comms comms = test::make_world(processes, threads);
    for (auto& c : comms) c = make_compressed_all_reduce(std::move(c), WireDtype::Bf16);
    on_threads(ranks, [&](int r) { comms[std::size_t(r)]->all_reduce_sum(grads[std::size_t(r)].data(), count); });
    for (int r = 1; r < ranks; ++r)
      QVERIFY(std::memcmp(grads[std::size_t(r)].data(), grads[0].data(), count * sizeof(float)) == 0);
    for (float x : grads[0]) QCOMPARE(x, round_one(WireDtype::Bf16, x));
  }

  // Gradients of 1e-9 (below fp16's smallest subnormal, 6e-8): plain fp16 would send zeros;
  // pre-scaled, each arrives within fp16's relative precision (2^-11) of the FP32 sum.
  void fp16_prescale_keeps_small_gradients() {
    const int ranks = 2;
    const std::size_t count = 512;
    auto grads = gradients(ranks, count, 1e-9, 3);
    std::vector<double> exact(count);
    for (std::size_t i = 0; i < count; ++i) exact[i] = double(grads[0][i]) + double(grads[1][i]);
    QCOMPARE(round_one(WireDtype::Fp16, grads[0][1]), 0.0f);   // what plain fp16 would do
    Comms comms = make_thread_communicators(ranks);
    for (auto& c : comms) c = make_compressed_all_reduce(std::move(c), WireDtype::Fp16);
    on_threads(ranks, [&](int r) { comms[std::size_t(r)]->all_reduce_sum(grads[std::size_t(r)].data(), count); });
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < count; ++i) largest = std::max(largest, std::fabs(exact[i]));
    for (std::size_t i = 0; i < count; ++i) worst = std::max(worst, std::fabs(grads[0][i] - exact[i]));
    QVERIFY2(worst <= largest * 0x1p-10, qPrintable(QString("worst %1 of %2").arg(worst).arg(largest)));
    // And large ones do not overflow.
    auto big = gradients(3, count, 6e4, 4);
    Comms three = make_thread_communicators(3);
    for (auto& c : three) c = make_compressed_all_reduce(std::move(c), WireDtype::Fp16);
    on_threads(3, [&](int r) { three[std::size_t(r)]->all_reduce_sum(big[std::size_t(r)].data(), count); });
    for (float x : big[0]) QVERIFY(std::isfinite(x));
  }

  // Half the bytes on the wire: what the compressed communicator reports, and what a simulated
  // link around it makes the exchange last (the link is slow enough that its ring outlasts the
  // real exchange even under a sanitizer: the exchange then lasts the ring of the wire's bytes
  // exactly, whatever this machine's speed; no timing assertion).
  void the_wire_carries_half_the_bytes() {
    const std::size_t count = 1 << 20;
    const SimulatedLink link{0.1, 0.0};
    for (const WireDtype w : {WireDtype::Fp32, WireDtype::Bf16}) {
      Comms comms = make_thread_communicators(2);
      for (auto& c : comms) c = make_compressed_all_reduce(std::move(c), w);
      QCOMPARE(comms[0]->all_reduce_wire_bytes(), w == WireDtype::Fp32 ? std::size_t(4) : std::size_t(2));
      std::vector<double> slept(2, 0.0);
      for (int r = 0; r < 2; ++r)
        comms[std::size_t(r)] = make_simulated_link(std::move(comms[std::size_t(r)]), link,
                                                    [&slept, r](double s) { slept[std::size_t(r)] += s; });
      std::vector<std::vector<float>> bufs(2, std::vector<float>(count, 1.0f));
      std::vector<CollectiveTimes> times(2);
      on_threads(2, [&](int r) {
        comms[std::size_t(r)]->all_reduce_sum(bufs[std::size_t(r)].data(), count);
        times[std::size_t(r)] = comms[std::size_t(r)]->take_times();
      });
      const double wire_s = ring_all_reduce_s(double(count) * double(wire_bytes(w)), 2, link.gbit, 0.0);
      QVERIFY2(slept[0] > 0, "the real exchange outlasted a 0.1 Gbit/s ring");
      QVERIFY2(std::fabs(times[0].transfer_s - wire_s) < 1e-9 * wire_s + 1e-12,
               qPrintable(QString("%1 s against the ring's %2 s").arg(times[0].transfer_s).arg(wire_s)));
    }
  }
};

QTEST_GUILESS_MAIN(TestCompressedAllReduce)
#include "test_compressed_all_reduce.moc"
