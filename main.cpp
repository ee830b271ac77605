#include "actors/curl_library.hpp"
#include "orchestrator/cli.hpp"

int main(int argc, char** argv) {
  int code = troupe::run_cli(argc, argv);
  troupe::settle_curl_load();
  return code;
}
