#include "relay/callback_body.h"

#include <fmt/format.h>

#include "net/crypto.h"

namespace ootci {
namespace {

// CRCR's action sends run_id and run_attempt as strings; accept integers too.
bool read_int(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return *out >= 0 && *out < 1000000000000;
  }
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty() || s.size() > 12) return false;  // small enough that sums cannot overflow
  int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  *out = n;
  return true;
}

// GitHub's run_id is an integer (sent as a string by CRCR's action); Buildkite's is a build UUID.
// Either is kept as given; the character set keeps it one segment of the state key.
bool read_run_id(const nlohmann::json& v, std::string* out) {
  if (v.is_number_integer()) {
    int64_t n = v.get<int64_t>();
    if (n < 0) return false;
    *out = std::to_string(n);
    return true;
  }
  if (!v.is_string() || !is_callback_run_id(v.get_ref<const std::string&>())) return false;
  *out = v.get<std::string>();
  return true;
}

std::string str(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// What a step says happened, canonically: two callbacks that agree on it are the same step sent
// twice (a re-run of the action step), whatever their timestamps, URLs or messages.
std::string outcome_hash(const CallbackBody& b) {
  nlohmann::json failed = nlohmann::json::array();
  if (b.failed_tests.is_array())
    for (const auto& t : b.failed_tests)
      failed.push_back(t.contains("name") && t["name"].is_string() ? t["name"] : nlohmann::json(t));
  nlohmann::json outcome = {{"status", to_string(b.status)}};
  if (b.status == JobStatus::kCompleted)
    outcome.update({{"conclusion", b.conclusion.text()},
                    {"passed", b.passed},
                    {"failed", b.failed},
                    {"skipped", b.skipped},
                    {"total", b.total},
                    {"failed_tests", failed}});
  return sha256_hex(outcome.dump());
}

// The commit under test: the pull request's head, a push's `after`, a nightly's own field.
void read_head_sha(const nlohmann::json& j, CallbackBody& b) {
  if (j.contains("payload") && j["payload"].is_object()) {
    const auto& p = j["payload"];
    if (p.contains("pull_request") && p["pull_request"].is_object()) {
      const auto& pr = p["pull_request"];
      if (pr.contains("number") && pr["number"].is_number_integer())
        b.pr_number = pr["number"].get<int64_t>();
      if (pr.contains("head") && pr["head"].is_object()) b.head_sha = str(pr["head"], "sha");
    }
    if (b.head_sha.empty()) b.head_sha = str(p, "after");
    if (b.head_sha.empty()) b.head_sha = str(p, "head_sha");
  }
  // A nightly names its commit at the top level (test-infra#8853); older senders in the payload,
  // or only as the delivery id.
  if (b.is_self_report() && !str(j, "pytorch_head_sha").empty())
    b.head_sha = str(j, "pytorch_head_sha");
  if (b.head_sha.empty() && b.is_self_report()) b.head_sha = b.delivery_id;
}

void read_test_results(const nlohmann::json& w, CallbackBody& b) {
  // A summary {passed, failed, skipped[, total]}; a malformed one is ignored.
  if (w.contains("test_results") && !w["test_results"].is_null()) {
    nlohmann::json tr = w["test_results"];
    if (tr.is_string()) tr = nlohmann::json::parse(tr.get<std::string>(), nullptr, false);
    bool ok = tr.is_object();
    for (auto [key, out] : {std::pair{"passed", &b.passed},
                            {"failed", &b.failed},
                            {"skipped", &b.skipped},
                            {"total", &b.total}}) {
      if (ok && tr.contains(key) && !read_int(tr[key], out)) ok = false;
    }
    if (!ok) {
      b.passed = b.failed = b.skipped = b.total = 0;
      b.notes.push_back("test_results ignored: expected {passed, failed, skipped[, total]}");
    } else if (!tr.contains("total")) {
      b.total = b.passed + b.failed + b.skipped;
    }
  }
}

void read_failed_tests(const nlohmann::json& j, CallbackBody& b) {
  if (j.contains("failed_tests_detail") && !j["failed_tests_detail"].is_null()) {
    const auto& f = j["failed_tests_detail"];
    if (!f.is_array()) {
      b.notes.push_back("failed_tests_detail dropped: expected a list");
    } else {
      b.failed_tests = nlohmann::json::array();
      bool cut = f.size() > kMaxFailedTests;
      for (size_t i = 0; i < std::min(f.size(), kMaxFailedTests); ++i) {
        nlohmann::json e = f[i];
        if (!e.is_object()) continue;
        for (auto [key, cap] : {std::pair{"message", kMaxTestMessageBytes},
                                {"stacktrace", kMaxTestStacktraceBytes}}) {
          if (e.contains(key) && e[key].is_string() && e[key].get<std::string>().size() > cap) {
            e[key] = truncate_utf8(e[key].get<std::string>(), cap);
            cut = true;
          }
        }
        b.failed_tests.push_back(std::move(e));
      }
      if (cut)
        b.notes.push_back(
            "failed_tests_detail truncated to 1000 entries, 1 KB messages, 4 KB "
            "stacktraces");
    }
  }
}

void read_triage_verdict(const nlohmann::json& j, const nlohmann::json& w, CallbackBody& b) {
  // Upstream CRCR reads workflow.triage_verdict; ootci's relay also the top-level field it had
  // first. When both are sent, the one upstream reads wins.
  const nlohmann::json* verdict = nullptr;
  if (w.contains("triage_verdict") && !w["triage_verdict"].is_null())
    verdict = &w["triage_verdict"];
  if (j.contains("triage_verdict") && !j["triage_verdict"].is_null()) {
    if (verdict)
      b.notes.push_back("top-level triage_verdict ignored: workflow.triage_verdict was sent too");
    else
      verdict = &j["triage_verdict"];
  }
  if (verdict) {
    nlohmann::json v = *verdict;
    std::string why = validate_triage_verdict(v, &b.notes);
    if (why.empty())
      b.triage = std::move(v);
    else
      b.notes.push_back("triage_verdict dropped: " + why);
  }
}

}  // namespace

std::string CallbackBody::state_key(const std::string& repo) const {
  return fmt::format("{}:{}:{}:{}:{}", delivery_id, repo, run_id, run_attempt, job_name);
}

std::string validate_triage_verdict(nlohmann::json& v, std::vector<std::string>* notes) {
  static const std::vector<std::string> categories = {"upstream", "backend", "infra", "flake",
                                                      "unknown"};
  static const std::vector<std::string> confidences = {"high", "medium", "low"};
  if (!v.is_object()) return "expected an object";
  auto sv = v.find("schema_version");
  if (sv == v.end() || !(*sv == 1 || *sv == "1")) return "schema_version must be 1";
  std::string category = str(v, "category");
  if (std::find(categories.begin(), categories.end(), category) == categories.end())
    return "category must be upstream, backend, infra, flake or unknown";
  std::string confidence = str(v, "confidence");
  if (std::find(confidences.begin(), confidences.end(), confidence) == confidences.end())
    return "confidence must be high, medium or low";
  if (v.contains("summary") && !v["summary"].is_string()) return "summary must be a string";
  if (v.contains("evidence") && !v["evidence"].is_array()) return "evidence must be a list";
  if (v.contains("suspected_upstream") && !v["suspected_upstream"].is_object() &&
      !v["suspected_upstream"].is_null())
    return "suspected_upstream must be an object";
  // ootci sends a name; upstream CRCR's schema (test-infra#8803) an object.
  if (v.contains("analyzer") && !v["analyzer"].is_string() && !v["analyzer"].is_object())
    return "analyzer must be a string or an object";
  // Upstream cuts rather than rejects: a verdict is advice, and losing it all for one long field
  // helps nobody.
  if (v.contains("summary")) {
    bool cut = false;
    std::string summary =
        truncate_utf8_chars(v["summary"].get<std::string>(), kMaxTriageSummaryChars, &cut);
    if (cut) {
      v["summary"] = summary;
      notes->push_back(
          fmt::format("triage_verdict.summary cut to {} characters", kMaxTriageSummaryChars));
    }
  }
  if (v.contains("evidence") && v["evidence"].size() > kMaxTriageEvidence) {
    size_t had = v["evidence"].size();
    v["evidence"].erase(v["evidence"].begin() + kMaxTriageEvidence, v["evidence"].end());
    notes->push_back(
        fmt::format("triage_verdict.evidence cut to {} of {} entries", kMaxTriageEvidence, had));
  }
  // After the cuts: a verdict over the limit only by its summary or evidence is cut, not lost.
  if (v.dump().size() > kMaxTriageBytes) return "larger than 16 KB";
  return "";
}

std::string outcome_hash_of(const std::string& body_text) {
  auto parsed = parse_callback_body(body_text);
  auto* b = std::get_if<CallbackBody>(&parsed);
  return b ? b->outcome_hash : "";
}

std::variant<CallbackBody, std::string> parse_callback_body(const std::string& text) {
  CallbackBody b;
  b.raw = text;
  b.json = nlohmann::json::parse(text, nullptr, false);
  if (b.json.is_discarded() || !b.json.is_object()) return std::string("Invalid JSON");
  const auto& j = b.json;
  b.delivery_id = str(j, "delivery_id");
  if (b.delivery_id.empty()) return std::string("missing required field: delivery_id");
  if (!j.contains("workflow") || !j["workflow"].is_object())
    return std::string("missing required field: workflow");
  const auto& w = j["workflow"];
  std::string status = str(w, "status");
  if (status.empty()) return std::string("missing required field: workflow.status");
  auto parsed_status = parse_job_status(status);
  if (!parsed_status)
    return fmt::format("workflow.status must be in_progress or completed, got '{}'", status);
  b.status = *parsed_status;
  b.workflow_name = str(w, "name");
  if (b.workflow_name.empty()) return std::string("missing required field: workflow.name");
  if (!w.contains("run_id") || !read_run_id(w["run_id"], &b.run_id))
    return fmt::format("missing required field: workflow.run_id ({})", kCallbackRunIdRule);
  if (b.run_id == "0") return std::string("workflow.run_id 0 is reserved for dispatch records");
  if (w.contains("run_attempt") && !w["run_attempt"].is_null() &&
      (!read_int(w["run_attempt"], &b.run_attempt) || b.run_attempt < 1))
    return std::string("workflow.run_attempt must be a positive integer");
  b.event_type = str(j, "event_type");
  if (b.event_type.empty()) b.event_type = "pull_request";
  b.conclusion = JobConclusion::parse(str(w, "conclusion"));
  b.workflow_url = str(w, "url");
  b.job_name = str(w, "job_name");
  b.check_run_id = w.contains("check_run_id") && w["check_run_id"].is_number_integer()
                       ? std::to_string(w["check_run_id"].get<int64_t>())
                       : str(w, "check_run_id");
  b.artifact_url = str(w, "artifact_url");
  b.callback_token = str(j, "callback_token");

  read_head_sha(j, b);
  read_test_results(w, b);
  read_failed_tests(j, b);
  read_triage_verdict(j, w, b);
  b.outcome_hash = outcome_hash(b);
  return b;
}

}  // namespace ootci
