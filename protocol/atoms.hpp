#pragma once
// Message tags. Each names one verb of a typed interface in protocol/interfaces.hpp.

#include <caf/atom.hpp>

namespace troupe {

using start_atom = caf::atom_constant<caf::atom("start")>;
using submit_atom = caf::atom_constant<caf::atom("submit")>;
using interrupt_atom = caf::atom_constant<caf::atom("interrupt")>;
using reply_atom = caf::atom_constant<caf::atom("reply")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using generate_atom = caf::atom_constant<caf::atom("generate")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using execute_atom = caf::atom_constant<caf::atom("execute")>;
using due_atom = caf::atom_constant<caf::atom("due")>;
using exited_atom = caf::atom_constant<caf::atom("exited")>;
using ask_atom = caf::atom_constant<caf::atom("ask")>;
using finished_atom = caf::atom_constant<caf::atom("finished")>;
using compact_atom = caf::atom_constant<caf::atom("compact")>;
using notify_atom = caf::atom_constant<caf::atom("notify")>;
using launch_atom = caf::atom_constant<caf::atom("launch")>;
using control_atom = caf::atom_constant<caf::atom("control")>;
using read_atom = caf::atom_constant<caf::atom("read")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using append_atom = caf::atom_constant<caf::atom("append")>;
using sync_atom = caf::atom_constant<caf::atom("sync")>;
using name_atom = caf::atom_constant<caf::atom("name")>;
using hook_atom = caf::atom_constant<caf::atom("hook")>;
using list_atom = caf::atom_constant<caf::atom("list")>;
using finish_atom = caf::atom_constant<caf::atom("finish")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using admit_atom = caf::atom_constant<caf::atom("admit")>;
using pause_atom = caf::atom_constant<caf::atom("pause")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using client_atom = caf::atom_constant<caf::atom("client")>;
using mcp_atom = caf::atom_constant<caf::atom("mcp")>;

} // namespace troupe
