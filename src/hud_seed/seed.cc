#include "hud_seed/seed.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

namespace ootci {
namespace {

constexpr int64_t kMinute = 60000;
constexpr int64_t kDay = 86400000;

// Made-up history from one random stream: the draws happen in a fixed order, so a seed always
// gives the same store.
class Seeder {
 public:
  Seeder(Store& store, const SeedOptions& o) : store_(store), o_(o), rng_(o.seed) {}

  SeedResult seed() {
    seed_backends();
    seed_deliveries();
    seed_nightlies();
    if (o_.xss_probe && !backends_.empty()) seed_xss_probe();
    flush();
    int best = 0;
    for (auto [p, n] : pr_jobs_)
      if (n > best) best = n, out_.busiest_pr = p;
    return out_;
  }

 private:
  struct Backend {
    std::string repo, level;
    double reliability, median_exec_min;
  };

  double uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng_); }
  bool chance(double p) { return uniform(0, 1) < p; }
  // Queue and execution times are log-normal: most jobs are quick, a few are very slow.
  int64_t lognormal(double median_min, double sigma) {
    return static_cast<int64_t>(median_min * kMinute *
                                std::exp(sigma * std::normal_distribution<double>(0, 1)(rng_)));
  }

  void flush() {
    store_.jobs.insert_jobs_bulk(batch_);
    out_.jobs += batch_.size();
    batch_.clear();
  }

  // The backends, one per level from L4 down, their tenure, the allowlist and a pending demotion.
  void seed_backends() {
    std::string l1, l2, l3, l4;
    for (int i = 0; i < o_.backends; ++i) {
      std::string repo = fmt::format("seed-org/backend-{}", i + 1);
      std::string level = i == 0                                    ? "L4"
                          : i == 1                                  ? "L3"
                          : i == o_.backends - 1 && o_.backends > 3 ? "L1"
                                                                    : "L2";
      double reliability = i == 0 ? 0.99 : i == 1 ? 0.96 : i == 2 ? 0.85 : 0.70;
      backends_.push_back({repo, level, reliability, 25.0 + 15 * i});
      if (level == "L1") l1 += "  - " + repo + "\n";
      if (level == "L2") l2 += "  - " + repo + "\n";
      if (level == "L3") l3 += "  seed-device:\n    " + repo + ": [seed-oncall]\n";
      if (level == "L4") l4 += "  - " + repo + ": '@seed-oncall'\n";
      // Tenure: the L2 backends have been there 45 days, the higher ones were L2 before.
      store_.levels.record_level(repo, "L2", o_.now_ms - 90 * kDay);
      if (level != "L2")
        store_.levels.record_level(repo, level, o_.now_ms - (level == "L1" ? 5 : 40) * kDay);
    }
    out_.allowlist_yaml = "L1:\n" + l1 + "L2:\n" + l2 + "L3:\n" + l3 + "L4:\n" + l4;
    if (o_.pending_demotion && o_.backends > 1)
      store_.levels.set_demotion({backends_[1].repo, o_.now_ms - 2 * 60 * kMinute, 4242,
                                  "https://github.com/pytorch/pytorch/pull/4242"});
    out_.first_backend = backends_.empty() ? "" : backends_[0].repo;
  }

  JobRecord make_job(const Backend& b, const std::string& delivery, int64_t pr,
                     const std::string& sha, const std::string& event, int64_t run_id, int attempt,
                     const std::string& workflow, const std::string& job, int64_t dispatched) {
    JobRecord j;
    j.delivery_id = delivery;
    j.repo = b.repo;
    j.run_id = std::to_string(run_id);
    j.run_attempt = attempt;
    j.job_name = job;
    j.workflow_name = workflow;
    j.event_type = event;
    j.head_sha = sha;
    j.pr_number = pr;
    j.level = b.level;
    j.key = fmt::format("{}:{}:{}:{}:{}", delivery, b.repo, run_id, attempt, job);
    j.dispatched_ms = dispatched;
    int64_t queue = lognormal(4, 0.9);
    j.queue_time_ms = attempt == 1 && event != "nightly" ? queue : -1;
    j.in_progress_ms = event == "nightly" ? -1 : dispatched + queue;
    int64_t exec = lognormal(b.median_exec_min, 0.5);
    j.created_ms = event == "nightly" ? dispatched + exec : j.in_progress_ms;
    j.workflow_url = fmt::format("https://github.com/{}/actions/runs/{}", b.repo, run_id);
    j.check_run_id = fmt::format("{}", run_id * 10 + attempt);
    j.check_run_created = b.level == "L4" || b.level == "L3";
    double roll = uniform(0, 1);
    if (dispatched + queue + exec > o_.now_ms) {  // still running
      j.status = JobStatus::kInProgress;
      j.created_ms = std::min(j.created_ms, o_.now_ms - 1);
      return j;
    }
    j.status = JobStatus::kCompleted;
    j.completed_ms = (event == "nightly" ? dispatched : j.in_progress_ms) + exec;
    j.execution_time_ms = event == "nightly" ? -1 : exec;
    j.conclusion = roll < b.reliability                                ? JobConclusion::kSuccess
                   : roll < b.reliability + (1 - b.reliability) * 0.85 ? JobConclusion::kFailure
                   : roll < b.reliability + (1 - b.reliability) * 0.95 ? JobConclusion::kTimedOut
                                                                       : JobConclusion::kCancelled;
    if (j.conclusion == JobConclusion::kTimedOut) {
      j.execution_time_ms = 6 * 60 * kMinute;
      j.completed_ms = j.in_progress_ms + j.execution_time_ms;
    }
    j.tests_total = 400 + static_cast<int64_t>(uniform(0, 200));
    j.tests_skipped = 20;
    if (j.conclusion == JobConclusion::kFailure) add_failure(j, job);
    j.tests_passed = j.tests_total - j.tests_failed - j.tests_skipped;
    return j;
  }

  // A failed job's failed tests and triage verdict.
  void add_failure(JobRecord& j, const std::string& job) {
    j.tests_failed = 1 + static_cast<int64_t>(uniform(0, 4));
    nlohmann::json failed = nlohmann::json::array();
    for (int t = 0; t < j.tests_failed; ++t)
      failed.push_back(
          {{"name",
            fmt::format("test_binary_ufuncs.py::TestBinaryUfuncsPRIVATEUSE1::test_add_int{}_{}",
                        8 << t, t)},
           {"message", "AssertionError: Tensor-likes are not equal!"},
           {"stacktrace",
            "Traceback (most recent call last):\n  File \"test_binary_ufuncs.py\", line "
            "1042\n"}});
    j.failed_tests_json = failed.dump();
    static const char* cats[] = {"backend", "upstream", "flake", "infra"};
    j.verdict_category = cats[static_cast<int>(uniform(0, 4)) % 4];
    j.verdict_confidence = chance(0.6) ? "high" : "medium";
    const std::string& cat = j.verdict_category;
    j.triage_json = nlohmann::json{
        {"schema_version", 1},
        {"category", cat},
        {"confidence", j.verdict_confidence},
        {"summary", fmt::format("{} failure in {}", cat, job)},
        {"evidence", {"re-ran failing variants 3x: failed 3/3"}},
        {"analyzer",
         "ootci"}}.dump();
  }

  // Pull-request and push deliveries: three jobs per backend each, a failure sometimes re-run.
  void seed_deliveries() {
    int64_t start = o_.now_ms - o_.days * kDay;
    for (int d = 0; d < o_.deliveries; ++d) {
      int64_t at = start + static_cast<int64_t>(uniform(0, 1) * (o_.days * kDay - 10 * kMinute));
      bool push = chance(0.15);
      if (!push && !chance(0.3)) ++pr_;  // 30 % of PR deliveries are synchronize on the same PR
      std::string delivery = fmt::format("seed-{:06}", d);
      std::string sha = fmt::format("{:040x}", rng_() % 0xffffffffffffULL);
      for (const Backend& b : backends_) {
        if (b.level == "L1") continue;  // L1 never calls back
        ++run_id_;
        for (const char* job : {"build", "test-cpu", "test-device"}) {
          JobRecord j = make_job(b, delivery, push ? 0 : pr_, sha, push ? "push" : "pull_request",
                                 run_id_, 1, "CI", job, at);
          bool failed = j.conclusion == JobConclusion::kFailure;
          batch_.push_back(j);
          if (!push) pr_jobs_[pr_]++;
          if (failed && chance(0.4)) {  // a re-run attempt, usually green
            batch_.push_back(make_job(b, delivery, push ? 0 : pr_, sha,
                                      push ? "push" : "pull_request", run_id_, 2, "CI", job,
                                      at + 3 * 60 * kMinute));
          }
        }
        if (batch_.size() > 5000) flush();
      }
    }
  }

  // One nightly job per backend and day.
  void seed_nightlies() {
    int64_t start = o_.now_ms - o_.days * kDay;
    for (int day = 0; day < o_.days; ++day)
      for (const Backend& b : backends_) {
        if (b.level == "L1") continue;
        int64_t at = start + day * kDay + 2 * 60 * kMinute;
        std::string sha = fmt::format("{:040x}", rng_() % 0xffffffffffffULL);
        JobRecord nightly =
            make_job(b, sha, 0, sha, "nightly", ++run_id_, 1, "nightly", "full-suite", at);
        bool failed = nightly.conclusion == JobConclusion::kFailure;
        batch_.push_back(nightly);
        if (failed && chance(0.4)) {  // re-run: the summary counts this latest attempt only
          batch_.push_back(make_job(b, sha, 0, sha, "nightly", run_id_, 2, "nightly", "full-suite",
                                    at + 3 * 60 * kMinute));
          out_.superseded_attempts++;
        }
      }
  }

  // A job whose every text is markup or a script URL, for the pages' escaping tests.
  void seed_xss_probe() {
    JobRecord x =
        make_job(backends_[0], "seed-xss", pr_, "deadbeef", "pull_request", ++run_id_, 1, "CI",
                 "<script>alert(1)</script>", o_.now_ms - 2 * 60 * kMinute - 50 * kMinute);
    x.status = JobStatus::kCompleted;
    x.conclusion = JobConclusion::kFailure;
    x.failed_tests_json =
        nlohmann::json::array({{{"name", "<img src=x onerror=alert(2)>"},
                                {"message", "<b>not bold</b>"},
                                {"stacktrace", "</pre><script>alert(3)</script>"}}})
            .dump();
    x.workflow_url = "javascript:alert(4)";
    batch_.push_back(x);
    pr_jobs_[pr_]++;
  }

  Store& store_;
  const SeedOptions& o_;
  std::mt19937_64 rng_;
  SeedResult out_;
  std::vector<Backend> backends_;
  std::vector<JobRecord> batch_;
  int64_t run_id_ = 100000;
  int64_t pr_ = 90000;
  std::map<int64_t, int> pr_jobs_;
};

}  // namespace

SeedResult seed_store(Store& store, const SeedOptions& o) {
  return Seeder(store, o).seed();
}

}  // namespace ootci
