// tritium parse FILE... [--dump]: is each file valid Python 3.12? Errors as file:line:col: message.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "tritium/pyast.h"

namespace tritium::cli {
namespace {

struct ParseOptions {
  std::vector<std::string> files;
  bool dump = false;
  bool json = false;
};

int run_parse(const ParseOptions& o) {
  int failed = 0;
  Json results = Json::array();
  for (const auto& file : o.files) {
    auto text = read_file(file);
    if (!text) return fail(kUsage, text.error().message);
    const auto parsed = pyast::parse(*text);
    Json r = {{"file", file}, {"ok", parsed.ok()}};
    if (parsed.error) {
      ++failed;
      // CPython reports 1-based columns in messages; the AST keeps 0-based byte offsets.
      r["line"] = parsed.error->line;
      r["col"] = parsed.error->col + 1;
      r["message"] = parsed.error->message;
      if (!o.json)
        std::cout << fmt::format("{}:{}:{}: {}\n", file, parsed.error->line, parsed.error->col + 1,
                                 parsed.error->message);
    } else if (!o.json) {
      std::cout << fmt::format("{}: ok ({} nodes)\n", file, parsed.tree.size());
      if (o.dump) std::cout << pyast::dump(parsed.tree);
    } else if (o.dump) {
      r["dump"] = pyast::dump(parsed.tree);
    }
    results.push_back(std::move(r));
  }
  if (o.json) print_json({{"files", results}, {"failed", failed}});
  return failed ? kFailures : kOk;
}

}  // namespace

void add_parse_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<ParseOptions>();
  auto* app = root.add_subcommand("parse", "Parse Python files with Tritium's parser (CPython 3.12 grammar)");
  app->add_option("files", o->files, "Python source files")->required();
  app->add_flag("--dump", o->dump, "Print the syntax tree of each valid file");
  app->add_flag("--json", o->json, "Print one JSON document instead of text");
  commands.push_back({app, [o]() -> int { return run_parse(*o); }});
}

}  // namespace tritium::cli
