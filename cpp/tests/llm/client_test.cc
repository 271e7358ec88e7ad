// The HTTP client against a real cpp-httplib server on loopback whose handlers misbehave on
// purpose: rate limits, server errors, bad requests, slowness, short answers. (The real model
// server is driven by python/tests/test_models_in_loop.py.)
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

#include "tritium/llm.h"

namespace tritium {
namespace {

Json completion(int choices, const std::string& text = "ok") {
  Json c = Json::array();
  for (int i = 0; i < choices; ++i)
    c.push_back({{"index", i},
                 {"message", {{"role", "assistant"}, {"content", text + std::to_string(i)}}},
                 {"finish_reason", "stop"}});
  return {{"choices", c}, {"usage", {{"prompt_tokens", 7}, {"completion_tokens", 3 * choices}}}};
}

class FaultServer : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      ++calls_;
      last_body_ = Json::parse(req.body);
      last_auth_ = req.get_header_value("Authorization");
      handler_(req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  std::unique_ptr<LlmClient> client(double timeout_s = 5, int retries = 3) {
    ClientOptions o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port_);
    o.api_key = "sekrit";
    o.timeout_s = timeout_s;
    o.max_retries = retries;
    o.backoff_s = 0.01;
    o.backoff_max_s = 0.05;
    auto c = LlmClient::create(o);
    EXPECT_TRUE(c) << c.error().message;
    return std::move(*c);
  }
  void reply(httplib::Response& res, int status, const Json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> calls_{0};
  Json last_body_;
  std::string last_auth_;
  std::function<void(const httplib::Request&, httplib::Response&)> handler_;
};

TEST_F(FaultServer, SendsTheRequestAndReadsTheChoices) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) { reply(res, 200, completion(3)); };
  Sampling s;
  s.n = 3;
  s.temperature = 0.5;
  s.max_tokens = 99;
  s.stop = {"```\n\n"};
  auto c = client();
  auto got = c->generate("write a kernel", s);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[2].text, "ok2");
  EXPECT_EQ(last_body_["messages"][0]["content"], "write a kernel");
  EXPECT_EQ(last_body_["n"], 3);
  EXPECT_EQ(last_body_["max_tokens"], 99);
  EXPECT_EQ(last_body_["stop"][0], "```\n\n");
  EXPECT_EQ(last_auth_, "Bearer sekrit");
  EXPECT_EQ(c->stats().completion_tokens, 9);
}

TEST_F(FaultServer, RetriesRateLimitsAndServerErrorsThenSucceeds) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) {
    if (calls_ == 1) {
      res.set_header("Retry-After", "0");
      reply(res, 429, {{"error", {{"message", "slow down"}}}});
    } else if (calls_ == 2) {
      reply(res, 503, {{"error", "overloaded"}});
    } else {
      reply(res, 200, completion(1));
    }
  };
  auto c = client();
  auto got = c->generate("p", {});
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(calls_, 3);
  EXPECT_EQ(c->stats().retries, 2);
}

TEST_F(FaultServer, GivesUpAfterTheRetriesWithTheServersWords) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 500, {{"error", {{"message", "boom"}}}});
  };
  auto got = client(5, 2)->generate("p", {});
  ASSERT_FALSE(got);
  EXPECT_EQ(calls_, 3);  // the first try and two retries
  EXPECT_NE(got.error().message.find("HTTP 500: boom"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("after 2 retries"), std::string::npos);
}

TEST_F(FaultServer, DoesNotRetryABadRequest) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 400, {{"error", {{"message", "'max_tokens' is too large"}}}});
  };
  auto got = client()->generate("p", {});
  ASSERT_FALSE(got);
  EXPECT_EQ(calls_, 1);
  EXPECT_NE(got.error().message.find("HTTP 400: 'max_tokens' is too large"), std::string::npos) << got.error().message;
}

TEST_F(FaultServer, TimesOutOnASlowServerAndRetries) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(calls_ == 1 ? 1500 : 0));
    reply(res, 200, completion(1));
  };
  auto got = client(0.3, 1)->generate("p", {});
  ASSERT_TRUE(got) << got.error().message;  // the retry is answered at once
  EXPECT_EQ(calls_, 2);
}

TEST_F(FaultServer, ATimeoutThatLastsIsAnError) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    reply(res, 200, completion(1));
  };
  auto got = client(0.2, 1)->generate("p", {});
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("no answer within 0.2 s"), std::string::npos) << got.error().message;
}

TEST_F(FaultServer, AsksAgainWhenTheServerReturnsFewerChoices) {
  handler_ = [this](const httplib::Request& req, httplib::Response& res) {
    (void)req;
    reply(res, 200, completion(1));  // a server that ignores n
  };
  Sampling s;
  s.n = 3;
  auto got = client()->generate("p", s);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size(), 3u);
  EXPECT_EQ(calls_, 3);
  EXPECT_EQ(last_body_["n"], 1);  // the last request asked only for what was missing
}

TEST_F(FaultServer, AReasoningModelsThinkingBecomesThePlan) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 200,
          {{"choices",
            {{{"index", 0}, {"message", {{"content", "```python\nx = 1\n```"}, {"reasoning_content", "fuse"}}}}}}});
  };
  auto got = client()->generate("p", {});
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)[0].text, "<think>\nfuse\n</think>\n\n```python\nx = 1\n```");
}

TEST_F(FaultServer, CurrentVllmsReasoningFieldBecomesThePlanToo) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, {{"choices", {{{"index", 0}, {"message", {{"content", "code"}, {"reasoning", "tile by 128"}}}}}}});
  };
  auto got = client()->generate("p", {});
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)[0].text, "<think>\ntile by 128\n</think>\n\ncode");
}

TEST_F(FaultServer, ExtraBodyFieldsReachTheServerWithoutOverridingTheClients) {
  handler_ = [this](const httplib::Request&, httplib::Response& res) { reply(res, 200, completion(1)); };
  ClientOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(port_);
  o.extra_body = {{"top_k", 20}, {"chat_template_kwargs", {{"enable_thinking", true}}}, {"n", 7}};
  auto c = LlmClient::create(o);
  ASSERT_TRUE(c);
  ASSERT_TRUE((*c)->generate("p", {}));
  EXPECT_EQ(last_body_["top_k"], 20);
  EXPECT_EQ(last_body_["chat_template_kwargs"]["enable_thinking"], true);
  EXPECT_EQ(last_body_["n"], 1);  // the client's own field stands
}

TEST_F(FaultServer, ManyPromptsKeepTheirOrderAndTheirOwnErrors) {
  handler_ = [this](const httplib::Request& req, httplib::Response& res) {
    const std::string prompt = Json::parse(req.body)["messages"][0]["content"];
    if (prompt == "bad")
      reply(res, 400, {{"error", "no"}});
    else
      reply(res, 200, completion(1, prompt));
  };
  auto c = client();
  std::vector<std::string> prompts{"a", "b", "bad", "d", "e"};
  std::atomic<int> done{0};
  auto results = generate_many(*c, prompts, {}, 3, [&](std::size_t, const GenerationResult&) { ++done; });
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(done, 5);
  EXPECT_EQ((*results[0])[0].text, "a0");
  EXPECT_FALSE(results[2]);
  EXPECT_EQ((*results[4])[0].text, "e0");
}

TEST(Client, RefusedConnectionsAreRetriedThenReported) {
  ClientOptions o;
  o.base_url = "http://127.0.0.1:1/v1";  // nothing listens on port 1
  o.max_retries = 1;
  o.backoff_s = 0.01;
  auto c = LlmClient::create(o);
  ASSERT_TRUE(c);
  auto got = (*c)->generate("p", {});
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("cannot reach the server"), std::string::npos) << got.error().message;
  EXPECT_EQ((*c)->stats().retries, 1);
}

TEST(Client, RejectsMalformedUrls) {
  for (const char* url : {"127.0.0.1:8000", "ftp://x", "http://"}) {
    ClientOptions o;
    o.base_url = url;
    EXPECT_FALSE(LlmClient::create(o)) << url;
  }
  ClientOptions o;
  o.base_url = "https://api.example.com/v1/";
  auto c = LlmClient::create(o);
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)->name(), "https://api.example.com/v1");
}

}  // namespace
}  // namespace tritium
