// How numbers, times and runs are written in the workbench (one place, so the table, the
// charts, the tooltips and the exports say the same thing the same way).
#pragma once
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

#include "records/run_record.h"

namespace mb {

// The devices of a run: "cpu:2", or "2 × cpu:1" for a run of 2 processes with cpu:1 each.
QString devices_text(const RunConfig& config);
// What a run changes from plain training, as every part of the window names it (the option
// table's words for the scenario): " · what-if cnn-dense4096 · simulated straggler r1 ×3 ·
// simulated link 1 Gbit/s" (short, for legends and labels; empty for the reference CNN on this
// machine as it is), and one sentence per scenario field that is on ("simulated straggler:
// replica 1 computes 3× slower"), for tooltips, the card and titles.
QString what_if_tags(const RunConfig& config);
QStringList scenario_sentences(const RunConfig& config);
// The straggler's sentence alone (empty without one), for the parts that show its replica.
QString straggler_text(const RunConfig& config);
QString default_run_name(const RunConfig& config);   // "cpu:2 · batch 128"
QString run_label(const RunRecord& record);          // the user's name, else the default
// The names of runs shown together (`baseline[i]`: run i is shown as a baseline;
// `compared_with[i]`: the index of the run it is compared with, its baseline, or -1). Short, for
// the legends and headlines (ShownRun::label): a run compared with its baseline by what differs
// from it (experiment/run_differences.h: "2 replicas", "2 replicas · tf32"), other runs by what
// tells them apart from each other, their what-ifs always said ("simulated straggler r1 ×3"),
// their replicas when nothing else tells them apart; "baseline" for a baseline shown beside other
// runs; the user's name where they gave one. Full, for tooltips and exports: run_label, with
// " (baseline)". Names that would still read alike get what tells those runs apart, then the
// start time, then the end of the id.
std::vector<QString> short_labels(const std::vector<const RunRecord*>& runs, const std::vector<bool>& baseline,
                                  const std::vector<int>& compared_with);
std::vector<QString> full_labels(const std::vector<const RunRecord*>& runs, const std::vector<bool>& baseline);
bool has_user_name(const RunRecord& record);
QString format_seconds(double s);                    // "0.84 s", "12.3 s", "2 min 05 s"
QString format_percent(double fraction, int decimals = 1);   // 0.8742 -> "87.4 %"
QString format_reduction(double reduction, int decimals = 1);   // 0.42 -> "−42.0 %", -0.1 -> "+10.0 %": one
// decimal everywhere, so a headline never rounds a −39.6 % to the −40 % the classic task asks for
QString format_speedup(double speedup);              // "1.74×"
QString format_deviation(double fraction);           // 0.06 -> "+6 %", -0.04 -> "−4 %" (measured vs expected)
QString format_rate(double images_per_s);            // "3,412 img/s"
QString format_date(const std::string& iso_utc);     // local time "2026-11-30 07:32"

}  // namespace mb
