#pragma once
// A local stand-in for the GitHub REST API, for tests and the demo. It checks the App JWT against
// the App's public key, issues installation tokens, and records repository_dispatch calls and
// signed generic-webhook deliveries. Tests can make it answer 5xx, 429 with Retry-After, or hang.
// For the level lifecycle it also keeps a small git model (branches, commits of whole files, the
// contents and git refs APIs), pull requests with labels and comments and GitHub's mergeable
// verdict, and the App's webhook deliveries: it sends webhooks to the relay as GitHub does,
// records each attempt's answer, lists them (GET /app/hook/deliveries) and redelivers one on
// POST /app/hook/deliveries/{id}/attempts.
#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ootci {

struct RecordedDispatch {
  std::string repo;  // owner/repo for API dispatches; the hook name for webhook deliveries
  std::string event_type;
  nlohmann::json client_payload;
  std::string raw_body;
  std::string delivery_header;  // X-Ootci-Delivery, webhook transport only
  int64_t received_ms = 0;
  bool answered_late = false;  // carried out, answered past the client's timeout (TargetProfile)
};

// A POST the stand-in recorded on another endpoint: check runs, re-runs, HUD forwards.
struct RecordedCall {
  std::string path;
  nlohmann::json body;
  std::string auth;  // Authorization or x-hud-internal-bot
  int64_t received_ms = 0;
};

// A pull request as the stand-in keeps it.
struct StandinPull {
  int64_t number = 0;
  std::string head, base, title, body, state = "open", user;
  std::vector<std::string> labels, comments;
};

// One attempt to deliver a webhook to the App's URL, as GET /app/hook/deliveries lists it.
struct StandinHookDelivery {
  int64_t id = 0;
  std::string guid, event, action;
  int status_code = 0;  // 0: no answer
  int64_t delivered_ms = 0;
  bool redelivery = false;
  std::string body;
};

struct Fault {
  int status = 503;        // HTTP status to answer
  int retry_after_s = -1;  // adds Retry-After when >= 0
  int hang_ms = 0;         // sleep before answering (a hang when longer than the client timeout)
};

// How every dispatch and API call behaves, like GitHub on a real day: each waits latency_ms
// (uniformly 50-150% of it), then fails with a 5xx at error_rate (not carried out), or at
// timeout_rate is carried out but answered only after timeout_ms, past the client's timeout, so
// the client cannot know it worked. Faults queued per target come first.
struct TargetProfile {
  int latency_ms = 0;
  double error_rate = 0;
  double timeout_rate = 0;
  int timeout_ms = 0;
  uint64_t seed = 1;
};

class GitHubStandin {
 public:
  GitHubStandin(int64_t app_id, std::string app_public_key_pem);
  ~GitHubStandin();

  // Binds 127.0.0.1 on `port` (0: any free port) and serves on a background thread.
  void start(int port = 0);
  void stop();
  int port() const { return port_; }
  int64_t app_id() const { return app_id_; }
  std::string url() const;

  // Generic-webhook receiver at /hooks/<name>, verifying X-Ootci-Signature-256 with `secret`.
  void add_hook(const std::string& name, const std::string& secret);
  // Serves `content` at GET /repos/<repo>/contents/<path>?ref=<ref> (raw media type).
  void set_file(const std::string& repo, const std::string& ref, const std::string& path,
                const std::string& content);
  int file_requests() const;
  // Repos without the App installed: installation lookup answers 404.
  void uninstall(const std::string& repo);
  // The next dispatches to `repo` (or hook name) get these faults, in order.
  void queue_faults(const std::string& repo, std::vector<Fault> faults);
  // While set, every dispatch to any target hangs this long before answering (0: off).
  void set_hang_all_ms(int ms);
  void set_profile(const TargetProfile& profile);

  // Upstream commits that exist, for GET /repos/<repo>/commits/<sha>.
  void add_commit(const std::string& repo, const std::string& sha);
  // POST /repos/<repo>/check-runs, /repos/<repo>/actions/runs/<id>/rerun[-failed-jobs], and
  // /hud/crcr/results (a HUD API stand-in) are recorded here, in arrival order.
  std::vector<RecordedCall> calls(const std::string& path_prefix) const;
  bool wait_for_calls(const std::string& path_prefix, size_t n, int timeout_ms) const;
  // The next requests to exactly this path get these faults (check runs, HUD forwards).
  void queue_call_faults(const std::string& path, std::vector<Fault> faults);

  // The git model. A commit on `branch` (created from the default branch `main` when new) that
  // sets `path` to `content`; returns its sha. set_file is the same on any ref name.
  std::string commit_file(const std::string& repo, const std::string& branch,
                          const std::string& path, const std::string& content);
  // The file at a branch's head (nullopt: no such branch or file).
  std::optional<std::string> file_at(const std::string& repo, const std::string& branch,
                                     const std::string& path) const;
  bool has_branch(const std::string& repo, const std::string& branch) const;
  std::vector<StandinPull> pulls(const std::string& repo) const;
  // As a maintainer closing (or merging) a PR by hand.
  void set_pull_state(const std::string& repo, int64_t number, const std::string& state);
  // The App's slug: its pull requests are by "<slug>[bot]".
  std::string app_slug() const { return "ootci-test-relay"; }

  // App webhook deliveries: the URL and secret GitHub would use for the App's webhook.
  void set_app_webhook(const std::string& url, const std::string& secret);
  // Delivers a webhook as GitHub does (signed, X-GitHub-Delivery = guid), records the attempt and
  // returns the status the relay answered (0: no answer).
  int deliver_webhook(const std::string& event, const std::string& guid, const std::string& body);
  std::vector<StandinHookDelivery> hook_deliveries() const;
  // Adds an attempt to the list as if GitHub had made it (its id is assigned).
  void record_hook_delivery(StandinHookDelivery delivery);
  int redelivery_requests() const;

  // The dispatches recorded so far, from the `from`-th on (a poller passes how many it has seen).
  std::vector<RecordedDispatch> dispatches(size_t from = 0) const;
  std::vector<RecordedDispatch> dispatches_for(const std::string& repo) const;
  // Waits until at least n dispatches were recorded; false on timeout.
  bool wait_for_dispatches(size_t n, int timeout_ms) const;
  int token_requests() const;
  int dispatch_requests(const std::string& repo) const;  // including failed ones

 private:
  bool app_jwt_ok(const httplib::Request& req, std::string* why) const;
  bool apply_fault(const std::string& target, httplib::Response& res);
  // The profile's part of a request that got no queued fault: true if it answered already (an
  // error). A carried-out timeout records first, then sleeps before the caller answers.
  bool apply_profile(httplib::Response& res, int* late_ms);
  void record(RecordedDispatch d);

  int64_t app_id_;
  std::string public_key_pem_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<RecordedDispatch> dispatches_;
  std::map<std::string, std::string> hooks_;
  std::set<std::string> uninstalled_;
  std::map<std::string, std::deque<Fault>> faults_;
  std::map<std::string, int> dispatch_requests_;
  std::map<std::string, std::string> tokens_;  // token → repo (by installation)
  std::map<int64_t, std::string> installations_;
  std::vector<RecordedCall> calls_;
  std::set<std::string> commits_;
  // The git model: commits by sha (whole files), and per repo its branches and the commit each
  // branch was last created or reset at (what GitHub's mergeable verdict compares against).
  struct Commit {
    std::map<std::string, std::string> files;
  };
  struct RepoModel {
    std::map<std::string, std::string> branches, fork_points;
    std::vector<StandinPull> pulls;
  };
  std::string new_commit(std::map<std::string, std::string> files);          // under mu_
  std::string resolve(const RepoModel& repo, const std::string& ref) const;  // sha or ""
  bool mergeable(const RepoModel& repo, const StandinPull& pr) const;        // under mu_
  nlohmann::json pull_json(const std::string& repo, const StandinPull& pr) const;
  void register_git_routes();
  // The repo whose installation token authorizes the request; "" for none.
  std::string token_repo(const httplib::Request& req) const;
  void register_hook_routes();
  std::map<std::string, Commit> git_commits_;
  std::map<std::string, RepoModel> repos_;
  int64_t next_commit_ = 1;
  int file_requests_ = 0;
  std::string app_hook_url_, app_hook_secret_;
  std::vector<StandinHookDelivery> hook_deliveries_;
  int redelivery_requests_ = 0;
  std::vector<std::thread> redeliveries_;
  int token_requests_ = 0;
  int hang_all_ms_ = 0;
  TargetProfile profile_;
  std::mt19937_64 rng_{1};
};

}  // namespace ootci
