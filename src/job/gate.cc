#include "job/gate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "base/subprocess.h"
#include "base/text.h"
#include "plan/release_pin.h"

// The rules (docs/dispatch.md, "ootci gate"):
//
// pull_request (client_payload.event_type, else a payload holding `pull_request`):
//   1. payload.action must be one of gate.pull_request.actions.
//   2. landed = action is closed and (pull_request.merged or the merged_label is on the PR).
//      A closed PR that did not land never builds; with require_merged only landed PRs build.
//   3. pull_request.base.ref must match a base_branches glob (`*` stays within one `/` segment)
//      or be release/MAJOR.MINOR of release_pin.
//   4. With gate.pull_request.labels, the PR needs one of them ({device} expands).
//   5. SHA: an open PR builds pull_request.head.sha. A landed PR builds per landed_sha: head,
//      merge_commit (merge_commit_sha; the base head when it is null or empty), or base_head
//      (the base branch's head now; when it cannot be resolved, nothing builds).
// push (event_type, else a payload holding `ref`): `ref` must match a gate.push.refs glob (`*`
//   also matches `/`) and the push must not delete it; it builds `after`.
// Any other event type does not build. A field a rule needs that is missing or mistyped is an
// Error naming its JSON path.

namespace ootci {
namespace {

using nlohmann::json;

// A field of the dispatch with its path from client_payload, so every error names the field.
class Field {
 public:
  Field(const json* value, std::string path) : value_(value), path_(std::move(path)) {}

  bool present() const { return value_ && !value_->is_null(); }
  const std::string& path() const { return path_; }

  // A child of this object; the child may be absent, this object may not.
  Field at(const std::string& key) const {
    const json& object = require(json::value_t::object, "an object");
    auto it = object.find(key);
    return Field(it == object.end() ? nullptr : &*it, path_ + "." + key);
  }

  std::vector<Field> items() const {  // an absent list reads as empty
    std::vector<Field> out;
    if (!present()) return out;
    const json& list = require(json::value_t::array, "a list");
    for (size_t i = 0; i < list.size(); ++i)
      out.emplace_back(&list[i], fmt::format("{}[{}]", path_, i));
    return out;
  }

  const std::string& str() const {
    return require(json::value_t::string, "a string").get_ref<const std::string&>();
  }

  std::optional<std::string> optional_str() const {
    if (!present()) return std::nullopt;
    return str();
  }

  int64_t integer() const {
    if (present() && value_->is_number_unsigned()) return value_->get<int64_t>();
    return require(json::value_t::number_integer, "an integer").get<int64_t>();
  }

  bool flag() const {  // absent or null reads as false
    if (!present()) return false;
    return require(json::value_t::boolean, "true or false").get<bool>();
  }

 private:
  const json& require(json::value_t type, const char* what) const {
    if (!value_) throw Error(path_ + ": missing");
    if (value_->type() != type)
      throw Error(fmt::format("{}: expected {}, not {}", path_, what, value_->type_name()));
    return *value_;
  }

  const json* value_;
  std::string path_;
};

std::string join(const std::vector<std::string>& items) {
  return items.empty() ? "(none)" : fmt::format("{}", fmt::join(items, ", "));
}

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

bool matches_any(const std::vector<std::string>& globs, const std::string& text, int flags) {
  for (const auto& glob : globs)
    if (fnmatch(glob.c_str(), text.c_str(), flags) == 0) return true;
  return false;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

GateDecision no_build(GateDecision d, std::string reason) {
  d.should_build = false;
  d.reason = std::move(reason);
  return d;
}

GateDecision build(GateDecision d, std::string sha, std::string reason) {
  d.should_build = true;
  d.upstream_sha = std::move(sha);
  d.reason = std::move(reason);
  return d;
}

// The event: client_payload.event_type, or for a payload without one, the webhook's shape.
std::string event_type(const Field& client_payload) {
  Field declared = client_payload.at("event_type");
  if (declared.present()) return declared.str();
  Field payload = client_payload.at("payload");
  if (payload.at("pull_request").present()) return "pull_request";
  if (payload.at("ref").present()) return "push";
  throw Error(
      "client_payload.event_type: missing, and client_payload.payload is neither a "
      "pull_request nor a push webhook");
}

// The PR's label names; for `labeled` also the label just added (payload.label).
std::vector<std::string> pr_labels(const Field& payload, const Field& pr,
                                   const std::string& action) {
  std::vector<std::string> names;
  for (const Field& label : pr.at("labels").items()) names.push_back(label.at("name").str());
  if (action == "labeled" && payload.at("label").present())
    names.push_back(payload.at("label").at("name").str());
  return names;
}

std::vector<std::string> base_branch_globs(const GatePolicy& policy) {
  std::vector<std::string> globs = policy.base_branches;
  if (auto minor = pinned_minor(policy.release_pin)) globs.push_back("release/" + *minor);
  return globs;
}

GateDecision landed_build(GateDecision d, const GatePolicy& policy, const Field& pr,
                          const std::string& repo, const std::string& base, const std::string& how,
                          const BranchHeadResolver& branch_head) {
  std::string landed = fmt::format("PR #{} landed on {} ({})", d.pr_number, base, how);
  if (policy.landed_sha == "head") {
    std::string sha = pr.at("head").at("sha").str();
    return build(d, sha, fmt::format("{}: builds the PR head {}", landed, sha));
  }
  std::string fallback;
  if (policy.landed_sha == "merge_commit") {
    auto merge_commit = pr.at("merge_commit_sha").optional_str();
    if (merge_commit && !merge_commit->empty())
      return build(d, *merge_commit,
                   fmt::format("{}: builds merge_commit_sha {}", landed, *merge_commit));
    fallback = "merge_commit_sha is empty, so ";
  }
  std::optional<std::string> head;
  std::string failure = "base_head_command failed";
  try {
    head = branch_head(repo, base);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!head)
    return no_build(d, fmt::format("{}, but {}the head of {} in {} could not be resolved: {}",
                                   landed, fallback, base, repo, failure));
  return build(d, *head,
               fmt::format("{}: {}builds the head of {}, {}", landed, fallback, base, *head));
}

GateDecision decide_pull_request(const GatePolicy& policy, const std::string& device_type,
                                 const Field& payload, const BranchHeadResolver& branch_head) {
  GateDecision d;
  d.event = "pull_request";
  d.action = payload.at("action").str();
  Field pr = payload.at("pull_request");
  d.pr_number = pr.at("number").integer();
  std::string repo = payload.at("repository").at("full_name").str();
  d.supersede_key = fmt::format("{}#{}", repo, d.pr_number);
  std::string pr_name = fmt::format("PR #{}", d.pr_number);

  if (!contains(policy.pr_actions, d.action))
    return no_build(d, fmt::format("action {} does not build (gate.pull_request.actions: {})",
                                   d.action, join(policy.pr_actions)));
  std::vector<std::string> labels = pr_labels(payload, pr, d.action);
  bool merged = pr.at("merged").flag();
  bool merged_label = contains(labels, policy.merged_label);
  d.landed = d.action == "closed" && (merged || merged_label);
  if (d.action == "closed" && !d.landed)
    return no_build(d, fmt::format("{} closed without merge (merged is false and no {} label)",
                                   pr_name, policy.merged_label));
  if (policy.require_merged && !d.landed)
    return no_build(
        d, fmt::format("not merged: policy requires a landed PR ({} {})", pr_name, d.action));

  std::string base = pr.at("base").at("ref").str();
  std::vector<std::string> bases = base_branch_globs(policy);
  if (!matches_any(bases, base, FNM_PATHNAME))
    return no_build(d, fmt::format("{} targets {}, not one of the base branches {}", pr_name, base,
                                   join(bases)));
  if (!policy.labels.empty()) {
    std::vector<std::string> wanted;
    for (const auto& label : policy.labels)
      wanted.push_back(replace_all(label, "{device}", device_type));
    bool labelled = std::any_of(wanted.begin(), wanted.end(),
                                [&](const std::string& w) { return contains(labels, w); });
    if (!labelled)
      return no_build(d, fmt::format("{} carries none of the labels {}", pr_name, join(wanted)));
  }

  if (d.landed)
    return landed_build(d, policy, pr, repo, base,
                        merged ? "merged" : fmt::format("{} label", policy.merged_label),
                        branch_head);
  std::string head = pr.at("head").at("sha").str();
  // Optional: without it the PR runs the full plan.
  if (auto base_sha = pr.at("base").at("sha").optional_str()) d.base_sha = *base_sha;
  return build(d, head,
               fmt::format("{} {} on {}: builds the PR head {}", pr_name, d.action, base, head));
}

GateDecision decide_push(const GatePolicy& policy, const Field& payload) {
  GateDecision d;
  d.event = "push";
  std::string ref = payload.at("ref").str();
  std::string repo = payload.at("repository").at("full_name").str();
  d.supersede_key = fmt::format("{}@{}", repo, ref);
  if (policy.push_refs.empty())
    return no_build(d,
                    fmt::format("push to {}: pushes do not build (gate.push.refs is empty)", ref));
  if (!matches_any(policy.push_refs, ref, 0))
    return no_build(d, fmt::format("push to {} matches none of gate.push.refs ({})", ref,
                                   join(policy.push_refs)));
  if (payload.at("deleted").flag()) return no_build(d, fmt::format("push deleted {}", ref));
  std::string after = payload.at("after").str();
  return build(d, after, fmt::format("push to {}: builds {}", ref, after));
}

// What a short command printed (stdout and stderr together), or why it failed.
struct CommandOutput {
  bool ok = false;
  std::string text;
  std::string failure;  // when !ok
};

std::string last_line(const std::string& text) {
  std::string t = trim_end(text);
  size_t nl = t.rfind('\n');
  return one_line(nl == std::string::npos ? t : t.substr(nl + 1));
}

CommandOutput run_command(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, int timeout_s) {
  CommandOutput out;
  std::string command = fmt::format("{}", fmt::join(argv, " "));
  try {
    SpawnOptions options;
    options.argv = argv;
    options.env = env;
    options.die_with_parent = true;
    CapturedRun r = run_captured(options, int64_t{timeout_s} * 1000);
    out.text = r.out;
    std::string why = last_line(r.err).empty() ? last_line(r.out) : last_line(r.err);
    if (r.timed_out)
      out.failure = fmt::format("{}: timed out after {} s", command, timeout_s);
    else if (r.exit_code > 128)
      out.failure = fmt::format("{}: killed by signal {}", command, r.exit_code - 128);
    else if (r.exit_code != 0)
      out.failure = fmt::format("{}: exited with {}{}", command, r.exit_code,
                                r.exit_code == 127 ? " (command not found?)"
                                : why.empty()      ? ""
                                                   : ": " + why);
    out.ok = out.failure.empty();
  } catch (const Error& e) {
    out.failure = fmt::format("{}: {}", command, e.what());
  }
  return out;
}

constexpr int kCommandTimeoutS = 300;

}  // namespace

BranchHeadResolver command_branch_head_resolver(const GatePolicy& policy) {
  std::vector<std::string> command = policy.base_head_command;
  if (command.empty())
    command = {"git", "ls-remote", "https://github.com/{repo}.git", "refs/heads/{branch}"};
  return
      [command](const std::string& repo, const std::string& branch) -> std::optional<std::string> {
        std::vector<std::string> argv;
        for (const auto& arg : command)
          argv.push_back(replace_all(replace_all(arg, "{repo}", repo), "{branch}", branch));
        // A CI job has nobody to type a password: git must fail instead of waiting for one.
        CommandOutput out = run_command(argv, {{"GIT_TERMINAL_PROMPT", "0"}}, kCommandTimeoutS);
        if (out.ok) {
          static const std::regex kSha("^[0-9a-f]{40}$");
          std::istringstream tokens(out.text);
          for (std::string token; tokens >> token;)
            if (std::regex_match(token, kSha)) return token;
          out.failure = fmt::format("{}: no 40-hex SHA in its output", fmt::join(argv, " "));
        }
        // The decision's reason says the head is unknown; stderr says why, for the job's log.
        std::cerr << "warning: gate: " << out.failure << "\n";
        return std::nullopt;
      };
}

GateDecision decide_gate(const GatePolicy& policy, const std::string& device_type,
                         const nlohmann::json& client_payload,
                         const BranchHeadResolver& branch_head) {
  Field root(&client_payload, "client_payload");
  std::string event = event_type(root);
  if (event == "pull_request")
    return decide_pull_request(policy, device_type, root.at("payload"), branch_head);
  if (event == "push") return decide_push(policy, root.at("payload"));
  GateDecision d;
  d.event = event;
  return no_build(d, fmt::format("event type {} does not build", event));
}

GateDecision decide_nightly(const GatePolicy& policy) {
  if (policy.nightly_command.empty()) throw Error("gate.nightly.command is not set in ootci.yaml");
  CommandOutput out = run_command(policy.nightly_command, {}, kCommandTimeoutS);
  if (!out.ok) throw Error("gate.nightly.command failed: " + out.failure);
  std::smatch m;
  std::regex pattern(policy.nightly_sha_pattern);
  if (!std::regex_search(out.text, m, pattern) || m.size() < 2 || m[1].str().empty())
    throw Error(fmt::format("gate.nightly.sha_pattern {} found no SHA in the output of {}: {}",
                            policy.nightly_sha_pattern, fmt::join(policy.nightly_command, " "),
                            one_line(out.text.substr(0, 200))));
  GateDecision d;
  d.event = "nightly";
  d.supersede_key = "nightly";
  return build(d, m[1].str(),
               fmt::format("nightly: builds {} from {}", m[1].str(), policy.nightly_command[0]));
}

std::string dispatch_selection(const GateDecision& d, const SelectSettings& select) {
  return d.should_build && !d.base_sha.empty() && select.pull_requests == "staged" ? "staged"
                                                                                   : "full";
}

std::string format_gate_outputs(const GateDecision& d, const SelectSettings* select) {
  std::string out;
  auto line = [&](const char* key, const std::string& value) {
    out += fmt::format("{}={}\n", key, one_line(value));
  };
  line("should_build", d.should_build ? "true" : "false");
  line("reason", d.reason);
  line("upstream_sha", d.upstream_sha);
  line("pr_number", std::to_string(d.pr_number));
  line("event", d.event);
  line("action", d.action);
  line("landed", d.landed ? "true" : "false");
  line("supersede_key", d.supersede_key);
  line("base_sha", d.base_sha);
  if (select) line("selection", dispatch_selection(d, *select));
  return out;
}

}  // namespace ootci
