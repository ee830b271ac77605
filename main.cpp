#include "orchestrator/cli.hpp"

int main(int argc, char** argv) { return troupe::run_cli(argc, argv); }
