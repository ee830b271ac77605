# Writes INPUT's bytes into OUTPUT as a C++ string constant returned by troupe::NAME().
file(READ "${INPUT}" content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${content}")
file(WRITE "${OUTPUT}"
"// Generated from ${INPUT}; do not edit.\n#include <string_view>\nnamespace troupe {\nnamespace {\nconst char bytes[] = {${bytes} 0};\n}\nstd::string_view ${NAME}() { return {bytes, sizeof(bytes) - 1}; }\n}\n")
