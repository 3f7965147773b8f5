#include "relay_store/store_sql.h"

#include <fmt/format.h>

#include <random>

namespace ootci {

const RecordColumns<OutboxItem>& outbox_columns() {
  static const RecordColumns<OutboxItem> columns{
      column<&OutboxItem::id>("id"),
      column<&OutboxItem::delivery_id>("delivery_id"),
      column<&OutboxItem::repo>("repo"),
      column<&OutboxItem::event_type>("event_type"),
      column<&OutboxItem::callback_token>("callback_token"),
      enum_column<&OutboxItem::status, parse_outbox_status>("status"),
      column<&OutboxItem::attempts>("attempts"),
      column<&OutboxItem::created_ms>("created_ms"),
      column<&OutboxItem::next_attempt_ms>("next_attempt_ms"),
      column<&OutboxItem::deadline_ms>("deadline_ms"),
      column<&OutboxItem::delivered_ms>("delivered_ms"),
      column<&OutboxItem::last_error>("last_error"),
      column<&OutboxItem::lease>("lease"),
  };
  return columns;
}

const RecordColumns<JobRecord>& job_columns() {
  static const RecordColumns<JobRecord> columns{
      column<&JobRecord::key>("key"),
      column<&JobRecord::delivery_id>("delivery_id"),
      column<&JobRecord::repo>("repo"),
      column<&JobRecord::run_id>("run_id"),
      column<&JobRecord::run_attempt>("run_attempt"),
      column<&JobRecord::job_name>("job_name"),
      column<&JobRecord::workflow_name>("workflow_name"),
      column<&JobRecord::event_type>("event_type"),
      column<&JobRecord::head_sha>("head_sha"),
      column<&JobRecord::pr_number>("pr_number"),
      column<&JobRecord::level>("level"),
      enum_column<&JobRecord::status, parse_stored_job_status>("status"),
      Column<JobRecord>{
          "conclusion",
          [](const JobRecord& j) -> SqlParam { return std::string_view(j.conclusion.text()); },
          [](JobRecord& j, const SqlRow& row, int col) {
            j.conclusion = JobConclusion::parse(row.text(col));
          }},
      column<&JobRecord::dispatched_ms>("dispatched_ms"),
      column<&JobRecord::in_progress_ms>("in_progress_ms"),
      column<&JobRecord::completed_ms>("completed_ms"),
      column<&JobRecord::queue_time_ms>("queue_time_ms"),
      column<&JobRecord::execution_time_ms>("execution_time_ms"),
      column<&JobRecord::in_progress_hash>("in_progress_hash"),
      column<&JobRecord::completed_hash>("completed_hash"),
      column<&JobRecord::tests_passed>("tests_passed"),
      column<&JobRecord::tests_failed>("tests_failed"),
      column<&JobRecord::tests_skipped>("tests_skipped"),
      column<&JobRecord::tests_total>("tests_total"),
      column<&JobRecord::workflow_url>("workflow_url"),
      column<&JobRecord::check_run_id>("check_run_id"),
      column<&JobRecord::artifact_url>("artifact_url"),
      column<&JobRecord::check_run_created>("check_run_created"),
      column<&JobRecord::last_body>("last_body"),
      column<&JobRecord::failed_tests_json>("failed_tests_json"),
      column<&JobRecord::triage_json>("triage_json"),
      column<&JobRecord::created_ms>("created_ms"),
      column<&JobRecord::verdict_category>("verdict_category"),
      column<&JobRecord::verdict_confidence>("verdict_confidence"),
      column<&JobRecord::superseded>("superseded"),
  };
  return columns;
}

const RecordColumns<JobRecord>& rollup_columns() {
  static const RecordColumns<JobRecord> columns =
      job_columns().subset({"repo", "event_type", "pr_number", "created_ms", "level", "status",
                            "conclusion", "queue_time_ms", "execution_time_ms", "verdict_category",
                            "verdict_confidence", "superseded"});
  ;
  return columns;
}

const RecordColumns<TaskItem>& task_columns() {
  static const RecordColumns<TaskItem> columns{
      column<&TaskItem::id>("id"),
      column<&TaskItem::kind>("kind"),
      column<&TaskItem::ordering_key>("ordering_key"),
      column<&TaskItem::payload>("payload"),
      column<&TaskItem::attempts>("attempts"),
      column<&TaskItem::created_ms>("created_ms"),
      column<&TaskItem::next_attempt_ms>("next_attempt_ms"),
      enum_column<&TaskItem::status, parse_task_status>("status"),
      column<&TaskItem::last_error>("last_error"),
      column<&TaskItem::lease>("lease"),
  };
  return columns;
}

const RecordColumns<Demotion>& demotion_columns() {
  static const RecordColumns<Demotion> columns{
      column<&Demotion::repo>("repo"),
      column<&Demotion::since_ms>("since_ms"),
      column<&Demotion::pr_number>("pr_number"),
      column<&Demotion::pr_url>("pr_url"),
  };
  return columns;
}

int64_t stable_hash24(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h & 0xffffff;
}

std::string lease_token() {
  thread_local std::random_device rd;  // getrandom(2)
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

int64_t read_i64(const SqlRow& r) {
  return r.i64(0);
}

}  // namespace ootci
