#include "protocol/registration.hpp"

#include <caf/actor_system_config.hpp>

#include "protocol/interfaces.hpp"

namespace troupe {

void register_protocol_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<tool_call>("troupe::tool_call")
    .add_message_type<tool_result>("troupe::tool_result")
    .add_message_type<message>("troupe::message")
    .add_message_type<context_snapshot>("troupe::context_snapshot")
    .add_message_type<loop_state>("troupe::loop_state")
    .add_message_type<token_usage>("troupe::token_usage")
    .add_message_type<tool_descriptor>("troupe::tool_descriptor")
    .add_message_type<model_request>("troupe::model_request")
    .add_message_type<model_reply>("troupe::model_reply")
    .add_message_type<step_request>("troupe::step_request")
    .add_message_type<step_outcome>("troupe::step_outcome")
    .add_message_type<process_exit>("troupe::process_exit")
    .add_message_type<session_started_event>("troupe::session_started_event")
    .add_message_type<message_event>("troupe::message_event")
    .add_message_type<notice_event>("troupe::notice_event")
    .add_message_type<session_ended_event>("troupe::session_ended_event")
    .add_message_type<generation_progress>("troupe::generation_progress")
    .add_message_type<session_status_event>("troupe::session_status_event")
    .add_message_type<hook_run_event>("troupe::hook_run_event")
    .add_message_type<turn_ended_event>("troupe::turn_ended_event")
    .add_message_type<permission_verdict>("troupe::permission_verdict")
    .add_message_type<mcp_tool>("troupe::mcp_tool")
    .add_message_type<mcp_server_report>("troupe::mcp_server_report")
    .add_message_type<http_request>("troupe::http_request")
    .add_message_type<http_response_head>("troupe::http_response_head")
    .add_message_type<http_body_chunk>("troupe::http_body_chunk")
    .add_message_type<http_transfer_done>("troupe::http_transfer_done")
    .add_message_type<task_notification>("troupe::task_notification")
    .add_message_type<queue_read>("troupe::queue_read")
    .add_message_type<hook_request>("troupe::hook_request")
    .add_message_type<hook_outcome>("troupe::hook_outcome")
    .add_message_type<hook_process_result>("troupe::hook_process_result")
    .add_message_type<agent_descriptor>("troupe::agent_descriptor")
    .add_message_type<agent_ended>("troupe::agent_ended")
    .add_message_type<agent_counts>("troupe::agent_counts")
    .add_message_type<agent_list>("troupe::agent_list")
    .add_message_type<agents_at_end>("troupe::agents_at_end")
    .add_message_type<control_command>("troupe::control_command")
    .add_message_type<control_reply>("troupe::control_reply")
    .add_message_type<permission_answer>("troupe::permission_answer")
    .add_message_type<hook_event>("troupe::hook_event");
}

} // namespace troupe
