// Compaction: the model summarises the older part of the context and a boundary message
// replaces it, with a circuit breaker for compactions that keep failing.

#include <caf/actor_system.hpp>

#include "actors/session_state.hpp"
#include "context/compaction.hpp"

namespace troupe {

bool auto_compaction_off(const session_state& st) {
  return st.state.auto_compact.consecutive_failures >= compaction_breaker;
}

namespace {

void compaction_failed(session_ptr self, const std::string& why, const compaction_next& then) {
  auto& st = self->state;
  auto& tracking = st.state.auto_compact;
  ++tracking.consecutive_failures;
  publish_notice(self, "compact_failed", "compaction failed: " + why);
  if (tracking.consecutive_failures == compaction_breaker)
    publish_notice(
        self, "compact_disabled",
        "auto-compaction is off for this session after " + std::to_string(compaction_breaker) +
            " failed compactions in a row; the conversation goes on uncompacted until the "
            "provider refuses it (/compact still works)");
  save_state(self);
  compaction_ended(self, then, compaction_status::failed, why);
}

} // namespace

namespace {

// Asks the model (through the step) for the summary of `plan` and logs the boundary.
void request_summary(session_ptr self, const compaction_plan& plan,
                     const compaction_trigger& trigger, const compaction_next& then) {
  auto& st = self->state;
  auto before = st.window.projected_tokens();
  auto request = compaction_request(plan, trigger, st.window.budget());
  publish_notice(self, "compacting",
                 "summarising " + std::to_string(plan.to_summarize.size()) + " older messages (~" +
                     std::to_string(before) + " tokens in the context; " + trigger.kind +
                     (trigger.reactive ? ", after a prompt-too-long answer" : "") + ")");
  auto on_reply = [=](model_reply& reply) {
    auto& s = self->state;
    if (s.phase == session_phase::ended)
      return;
    count_usage(self, reply.usage);
    bool requested = take_interrupt_request(self);
    bool interrupted = reply.error == model_error_kind::interrupted || requested;
    if (interrupted) {
      compaction_ended(self, then, compaction_status::interrupted, "interrupted");
      return;
    }
    if (!reply.ok()) {
      compaction_failed(self, reply.error_message, then);
      return;
    }
    auto summary = reply.assistant.content;
    if (summary.find_first_not_of(" \t\r\n") == std::string::npos) {
      compaction_failed(self, "the model answered with an empty summary", then);
      return;
    }
    compaction_record record;
    record.trigger = trigger;
    record.summary = std::move(summary);
    record.tokens_before = before;
    record.summarized_messages = static_cast<int64_t>(plan.to_summarize.size());
    record.preserved_from = plan.preserved_from;
    auto boundary = make_boundary(record);
    record.tokens_after = s.window.project(s.window.estimated_after(boundary, plan));
    boundary.meta["post_tokens"] = record.tokens_after;
    if (!append_message(self, std::move(boundary)))
      return;
    auto& tracking = s.state.auto_compact;
    tracking.compacted = true;
    tracking.turns_since_compact = 0;
    tracking.consecutive_failures = 0;
    for (auto& m : fire(self, hook_point::post_compact))
      if (!append_message(self, std::move(m)))
        return;
    save_state(self);
    compaction_ended(self, then, compaction_status::done, {});
  };
  self->request(st.step, caf::infinite, compact_atom::value, std::move(request))
      .then(on_reply, [=](caf::error& err) {
        model_reply failed;
        failed.error = model_error_kind::transport;
        failed.error_message = "step failed: " + self->system().render(err);
        on_reply(failed);
      });
}

} // namespace

bool compact(session_ptr self, compaction_trigger trigger, compaction_next then) {
  auto& st = self->state;
  auto plan = st.window.plan_compaction();
  if (plan.empty()) {
    publish_notice(self, "compact", "nothing to compact: no message since the last compaction");
    return false;
  }
  for (auto& extra : fire(self, hook_point::pre_compact))
    trigger.instructions += (trigger.instructions.empty() ? "" : "\n") + extra.content;
  st.phase = session_phase::compacting;
  // External PreCompact hooks add to the instructions too (their context and their messages).
  run_hooks(self, hook_event::pre_compact,
            {{"trigger", trigger.kind}, {"custom_instructions", trigger.instructions}},
            [=](const hook_outcome& hook) mutable {
              if (!hook.additional_context.empty())
                trigger.instructions += (trigger.instructions.empty() ? "" : "\n") +
                                        hook.additional_context;
              for (auto& text : hook.messages)
                trigger.instructions += (trigger.instructions.empty() ? "" : "\n") + text;
              request_summary(self, plan, trigger, then);
            },
            hook_wait::pre_compact(then)); // interrupted: the compaction ends so
  return true;
}

} // namespace troupe
