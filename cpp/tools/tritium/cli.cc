#include "cli.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include <fmt/format.h>

namespace tritium::cli {

int fail(int code, const std::string& message) {
  std::cerr << "tritium: error: " << message << "\n";
  return code;
}

void print_json(const Json& document) { std::cout << document.dump() << std::endl; }

bool is_terminal(int fd) { return isatty(fd) == 1; }

Progress::Progress(std::size_t total)
    : total_(total), enabled_(is_terminal(2)), start_(std::chrono::steady_clock::now()) {}

void Progress::update(std::size_t done, const std::string& label) {
  if (!enabled_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? (total_ - done) / rate : 0;
  std::cerr << fmt::format("\r\033[K[{}/{}] {:.2f}/s ETA {:.0f}s {}", done, total_, rate, eta, label) << std::flush;
}

void Progress::clear() {
  if (enabled_) std::cerr << "\r\033[K" << std::flush;
}

void add_version_command(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand("version", "Print the version");
  auto json = std::make_shared<bool>(false);
  app->add_flag("--json", *json, "Print JSON");
  commands.push_back({app, [json]() -> int {
                        if (*json)
                          print_json({{"tritium", version()}});
                        else
                          std::cout << "tritium " << version() << "\n";
                        return kOk;
                      }});
}

void add_help_command(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand("help", "Show help for tritium or for one command");
  auto topic = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  app->add_option("command", *topic, "The command to explain");
  app->add_flag("--json", *json, "List the commands as JSON");
  commands.push_back({app, [&root, topic, json]() -> int {
                        if (*json) {
                          Json list = Json::array();
                          for (const auto* sub : root.get_subcommands({}))
                            list.push_back({{"name", sub->get_name()}, {"description", sub->get_description()}});
                          print_json({{"commands", list}});
                          return kOk;
                        }
                        if (topic->empty()) {
                          // root.help() would describe the selected subcommand, `help` itself.
                          std::cout << root.get_formatter()->make_help(&root, "tritium", CLI::AppFormatMode::Normal);
                          return kOk;
                        }
                        try {
                          std::cout << root.get_subcommand(*topic)->help();
                        } catch (const CLI::OptionNotFound&) {
                          return fail(kUsage, fmt::format("no command '{}'; 'tritium help' lists them", *topic));
                        }
                        return kOk;
                      }});
}

}  // namespace tritium::cli
