// The chip's reference units (hardware.md §6): SparseCore, HBMModel, ChipNoC and the TinyTPUChip top, each
// driven as the reference's own testbench drives it (test/Tb*.bsv at hanw/tinytpu 1142ef2), rule for rule,
// printing what the testbench prints; the expected cycles are derived from the units' definitions.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

#include "base/errors.h"
#include "chip/chip_noc.h"
#include "chip/chip_timeline.h"
#include "chip/hbm_model.h"
#include "chip/sparse_core.h"
#include "chip/tinytpu_chip.h"
#include "helpers.h"
#include "isa/sxu_ops.h"

using namespace tinytpu;

namespace {

using Emb = SparseCore::Embedding;

// What a testbench prints: its "Cycle N: ..." lines (after `prefix`), and the tally of its checks that ends
// it.
struct TbOutput {
  std::string prefix;
  std::ostringstream text;
  int passed = 0, failed = 0;
  void say(int cycle, const std::string& what) {
    text << prefix << "Cycle " << cycle << ": " << what << "\n";
  }
  void check(int cycle, bool ok, const std::string& pass, const std::string& fail) {
    say(cycle, ok ? pass : fail);
    ++(ok ? passed : failed);
  }
  std::string results() {
    text << "Results: " << passed << " passed, " << failed << " failed\n";
    return text.str();
  }
  std::string timeout() { return text.str() + "FAIL: timeout\n"; }
};

// Each cycle, the testbench's rules read the state at the cycle's start (the guards below), call their
// methods, print; then the units tick. Rules print in the order the testbench declares them.
std::string tb_sparse_core() {
  SparseCore sc(8, 4, 3);
  TbOutput out;
  bool checked1 = false, phase2 = false, submitted2 = false, checked2 = false;
  for (int cycle = 0; cycle <= 100; ++cycle) {
    const bool done = sc.is_done();
    if (cycle == 0) sc.load_embedding(0, {1, 0, 0, 0});
    if (cycle == 1) sc.load_embedding(2, {0, 5, 0, 0});
    if (cycle == 2) {
      sc.load_embedding(5, {0, 0, 3, 7});
      out.say(cycle, "embedding table loaded");
    }
    if (cycle == 3) {
      sc.submit_bag({2, 0, 0}, 1);
      out.say(cycle, "submitted bag [2] count=1");
    }
    if (cycle > 3 && !done) out.say(cycle, "SC computing...");
    if (cycle > 3 && done && !checked1) {
      checked1 = true;
      out.check(cycle, sc.result() == Emb{0, 5, 0, 0}, "PASS single lookup [0,5,0,0]", "FAIL single lookup");
    }
    if (done && !phase2) {
      sc.reset();
      phase2 = true;
      out.say(cycle, "SC reset");
    }
    if (phase2 && !submitted2 && !done) {
      sc.submit_bag({0, 2, 5}, 3);
      submitted2 = true;
      out.say(cycle, "submitted bag [0,2,5] count=3");
    }
    if (submitted2 && done && !checked2) {
      checked2 = true;
      out.check(cycle, sc.result() == Emb{1, 5, 3, 7}, "PASS multi-index sum-pooling [1,5,3,7]",
                "FAIL multi-index");
      return out.results();
    }
    sc.tick();
  }
  return out.timeout();
}

std::string tb_hbm_model() {
  HbmModel hbm(64, 3);
  TbOutput out;
  for (int cycle = 0; cycle <= 50; ++cycle) {
    if (cycle == 0) {
      Tile t{};
      t[0] = 42;
      t[2 * kRows + 3] = 77;
      hbm.write(10, t);
      out.say(cycle, "wrote addr 10 (42, 77)");
    }
    if (cycle == 1) {
      hbm.read_req(10);
      out.say(cycle, "issued readReq addr 10");
    }
    if (cycle == 4) {
      const Tile& t = hbm.read_resp();
      out.check(cycle, t[0] == 42 && t[2 * kRows + 3] == 77, "PASS HBM read with latency-3", "FAIL HBM");
    }
    if (cycle == 5) return out.results();
    hbm.tick();
  }
  return out.timeout();
}

Instr instr(SxuOpcode op, int w_base = 0, int a_base = 0, int t_len = 0) {
  Instr i;
  i.op = uint8_t(op);
  i.mxuWBase = uint8_t(w_base);
  i.mxuABase = uint8_t(a_base);
  i.mxuTLen = uint8_t(t_len);
  return i;
}

std::string tb_tinytpu_chip() {
  TinyTpuChip chip;
  TbOutput out;
  bool forwarded = false;
  for (int cycle = 0; cycle <= 300; ++cycle) {
    const bool tc0_done = chip.tc0_done(), sc_done = chip.sc_done();
    if (cycle == 0) {
      I8Tile w{};
      for (int k = 0; k < kRows; ++k) w[size_t(k * kRows + k)] = 1;
      chip.load_tc0_weights(0, w);
      out.say(cycle, "TC0 identity weights loaded");
    }
    if (cycle == 1) {
      chip.load_tc0_activations(1, {1, 2, 3, 4});
      out.say(cycle, "TC0 activations [1,2,3,4] loaded");
    }
    if (cycle == 2) {
      chip.load_sc_embedding(1, {10, 20, 30, 40});
      out.say(cycle, "SC embedding[1]=[10,20,30,40]");
    }
    if (cycle == 3) chip.load_tc0_program(0, instr(SxuOpcode::kDispatchMxu, 0, 1, 1));
    if (cycle == 4) chip.load_tc0_program(1, instr(SxuOpcode::kWaitMxu));
    if (cycle == 5) {
      chip.load_tc0_program(2, instr(SxuOpcode::kHalt));
      out.say(cycle, "TC0 program loaded");
    }
    if (cycle == 6) {
      chip.start_tc0(3);
      out.say(cycle, "TC0 started");
    }
    if (cycle > 6 && !tc0_done) out.say(cycle, "TC0 computing...");
    const bool forwarding = tc0_done && !forwarded && chip.can_forward();
    if (forwarding) {
      chip.forward_tc0_result_to_sc(0);
      out.say(cycle, "TC0 done, forwarding result[0] as SC index");
    }
    if (forwarded && !sc_done) out.say(cycle, "SC computing...");
    if (forwarded && sc_done) {
      out.check(cycle, chip.sc_result() == Emb{10, 20, 30, 40}, "PASS chip pipeline [10,20,30,40]",
                "FAIL chip result");
      return out.results();
    }
    forwarded |= forwarding;
    chip.tick();
  }
  return out.timeout();
}

// Bluesim's output of a reference testbench or probe (kernels/reference/chip/README.md says how it was made).
std::string recorded(const std::string& name) {
  return test::read_file(std::string(TINYTPU_KERNELS_DIR) + "/reference/chip/" + name + ".expected");
}

// Output lines grouped by the cycle they name (a line without one goes with the cycle before it), each
// cycle's in sorted order: Bluesim prints a cycle's lines in its schedule's order, which a probe of many
// rules leaves open.
std::map<int, std::multiset<std::string>> by_cycle(const std::string& text) {
  std::map<int, std::multiset<std::string>> cycles;
  std::istringstream in(text);
  int cycle = -1;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("Cycle ");
    if (at != std::string::npos) cycle = std::stoi(line.substr(at + 6));
    cycles[cycle].insert(line);
  }
  return cycles;
}

NocPacket packet(int dst, int src, uint32_t payload) { return {uint8_t(dst), uint8_t(src), payload}; }

std::string hex(uint32_t v) {
  std::ostringstream s;
  s << std::hex << v;
  return s.str();
}

std::string tb_chip_noc() {
  ChipNoc noc(3);
  TbOutput out;
  // check_node1, check_node2, check_loopback: a packet received, its source and payload checked
  auto receive = [&](int cycle, int node, int src, uint32_t payload, const std::string& pass,
                     const std::string& fail) {
    const NocPacket p = noc.recv(node);
    out.check(cycle, p.src == src && p.payload == payload, pass, fail);
  };
  for (int cycle = 0; cycle <= 50; ++cycle) {
    if (cycle == 0) {
      noc.send(0, packet(1, 0, 0xDEAD));
      out.say(cycle, "node 0 -> node 1 payload=0xDEAD");
    }
    if (cycle == 2 && noc.can_recv(1))
      receive(cycle, 1, 0, 0xDEAD, "PASS node 1 received packet", "FAIL node 1");
    if (cycle == 5) {
      noc.send(0, packet(2, 0, 0xBEEF));
      out.say(cycle, "node 0 -> node 2 payload=0xBEEF");
    }
    if (cycle >= 7 && noc.can_recv(2))
      receive(cycle, 2, 0, 0xBEEF, "PASS node 2 two-hop delivery", "FAIL node 2");
    if (cycle == 8) {
      noc.send(1, packet(1, 1, 0xCAFE));
      out.say(cycle, "node 1 -> node 1 (loopback)");
    }
    if (cycle == 9 && noc.can_recv(1)) receive(cycle, 1, 1, 0xCAFE, "PASS loopback", "FAIL loopback");
    if (cycle == 15) return out.results();
    noc.tick();
  }
  return out.timeout();
}

// ProbeNoC.bsv's mkProbeNoCConst: four ChipNoC#(3), one a question, node numbers fixed where called.
std::string probe_noc() {
  ChipNoc a(3), b(3), c(3), d(3);
  TbOutput out{"[const] "};
  // canRecv(0), (1), (2) as the probes print them, when they change
  auto monitor = [&](ChipNoc& noc, char name, std::string& last, int cycle) {
    const std::string v =
        std::string() + "01"[noc.can_recv(0)] + "01"[noc.can_recv(1)] + "01"[noc.can_recv(2)];
    if (cycle == 0 || v != last) out.say(cycle, std::string(1, name) + " mon canRecv(0,1,2)=" + v);
    last = v;
  };
  std::string a_last, b_last, c_last, d_last;
  bool a_got = false, b_sent = false, b_got1 = false;
  int b_fill = 0, b_drained = 0, c_count = 0, c_got = 0, d_count = 0, d_got = 0;
  for (int cycle = 0;; ++cycle) {
    if (cycle == 40) {
      out.say(cycle, "end of probe");
      return out.text.str();
    }
    // A: recv(1) with only inbox 1 holding a packet
    if (cycle <= 8) monitor(a, 'A', a_last, cycle);
    if (cycle == 0) {
      a.send(0, packet(1, 0, 0xA1));
      out.say(cycle, "A send 0->1 payload=0xA1 FIRED");
    }
    if (cycle >= 1 && cycle <= 8 && !a_got) {
      if (a.can_recv(1)) {
        const NocPacket p = a.recv(1);
        a_got = true;
        out.say(cycle, "A recv(1) FIRED payload=0x" + hex(p.payload) + " src=" + std::to_string(p.src));
      } else {
        out.say(cycle, "A recv(1) did not fire");
      }
    }
    // B: inbox 2 filled and never read until cycle 14, then a packet for node 1
    if (cycle <= 25) monitor(b, 'B', b_last, cycle);
    bool b_sending = false;
    if (b_fill < 2 && b.can_send(0, packet(2, 0, 0))) {
      const uint32_t payload = b_fill == 0 ? 0xB1 : 0xB2;
      b.send(0, packet(2, 0, payload));
      ++b_fill;
      b_sending = true;
      out.say(cycle, "B fill send 0->2 payload=0x" + hex(payload) + " FIRED");
    }
    if (cycle >= 5 && !b_sent && !b_sending && b.can_send(0, packet(1, 0, 0xB3))) {
      b.send(0, packet(1, 0, 0xB3));
      b_sent = true;
      out.say(cycle, "B send 0->1 payload=0xB3 FIRED");
    } else if (cycle >= 5 && cycle <= 25 && !b_sent) {
      out.say(cycle, "B send 0->1 did not fire");
    }
    bool b_receiving = false;
    if (cycle >= 5 && !b_got1 && b.can_recv(1)) {
      const NocPacket p = b.recv(1);
      b_got1 = b_receiving = true;
      out.say(cycle, "B recv(1) FIRED payload=0x" + hex(p.payload));
    } else if (cycle >= 5 && cycle <= 25 && !b_got1) {
      out.say(cycle, "B recv(1) did not fire");
    }
    if (cycle >= 14 && b_drained < 2 && !b_receiving && b.can_recv(2)) {
      ++b_drained;
      out.say(cycle, "B recv(2) FIRED payload=0x" + hex(b.recv(2).payload));
    }
    // C: three packets for node 1 before any is read
    if (cycle <= 25) monitor(c, 'C', c_last, cycle);
    if (c_count < 3) {
      const uint32_t payload = 0xC1 + uint32_t(c_count);
      if (c.can_send(0, packet(1, 0, payload))) {
        c.send(0, packet(1, 0, payload));
        ++c_count;
        out.say(cycle, "C send 0->1 payload=0x" + hex(payload) + " FIRED");
      } else {
        out.say(cycle, "C send 0->1 did not fire (cCnt=" + std::to_string(c_count) + ")");
      }
    }
    if (cycle >= 10 && cycle <= 30 && c_got < 3 && c.can_recv(1)) {
      ++c_got;
      out.say(cycle, "C recv(1) FIRED payload=0x" + hex(c.recv(1).payload));
    }
    if (cycle == 31) out.say(cycle, "C received " + std::to_string(c_got) + " of 3 packets");
    // D: a packet for node 2 sent and one received every cycle
    if (cycle <= 12) monitor(d, 'D', d_last, cycle);
    if (cycle <= 5) {
      const uint32_t payload = 0xD0 + uint32_t(cycle);
      if (d.can_send(0, packet(2, 0, payload))) {
        d.send(0, packet(2, 0, payload));
        ++d_count;
        out.say(cycle, "D send 0->2 payload=0x" + hex(payload) + " FIRED");
      } else {
        out.say(cycle, "D send 0->2 did not fire");
      }
    }
    if (cycle <= 20 && d.can_recv(2)) {
      ++d_got;
      out.say(cycle, "D recv(2) FIRED payload=0x" + hex(d.recv(2).payload));
    }
    if (cycle == 21)
      out.say(cycle, "D sent " + std::to_string(d_count) + ", received " + std::to_string(d_got));
    for (ChipNoc* noc : {&a, &b, &c, &d}) noc->tick();
  }
}

// ProbeSC.bsv: a bag of none, a full bag, and a submit retried from the cycle of a reset.
std::string probe_sparse_core() {
  SparseCore z(8, 4, 3), t(8, 4, 3);
  TbOutput out;
  auto result = [](const Emb& r) {
    return "[" + std::to_string(r[0]) + "," + std::to_string(r[1]) + "," + std::to_string(r[2]) + "," +
           std::to_string(r[3]) + "]";
  };
  bool z2 = false;
  for (int cycle = 0; cycle <= 20; ++cycle) {
    const bool z_done = z.is_done(), t_done = t.is_done();
    out.say(cycle, "scZ.isDone=" + std::to_string(z_done) + "  scT.isDone=" + std::to_string(t_done));
    const std::pair<int, Emb> rows[] = {{0, {1, 0, 0, 0}}, {2, {0, 5, 0, 0}}, {5, {0, 0, 3, 7}}};
    if (cycle <= 2) {
      t.load_embedding(rows[cycle].first, rows[cycle].second);
      z.load_embedding(rows[cycle].first, rows[cycle].second);
      if (cycle == 2) out.say(cycle, "tables loaded");
    }
    if (cycle == 3) {
      z.submit_bag({0, 0, 0}, 0);
      out.say(cycle, "scZ.submitBag count=0 FIRED");
      t.submit_bag({0, 2, 5}, 3);
      out.say(cycle, "scT.submitBag [0,2,5] count=3 FIRED");
    }
    if (z_done) out.say(cycle, "scZ.result=" + result(z.result()));
    if (t_done) out.say(cycle, "scT.result=" + result(t.result()));
    if (cycle == 8) {
      z.reset();
      out.say(cycle, "scZ.reset FIRED");
    }
    if (cycle >= 8 && cycle <= 12 && !z2 && z.can_submit()) {
      z.submit_bag({5, 0, 0}, 1);
      z2 = true;
      out.say(cycle, "scZ.submitBag [5] count=1 FIRED");
    }
    z.tick();
    t.tick();
  }
  return out.text.str();
}

}  // namespace

TEST_CASE("SparseCore: the reference testbench, isDone count + 2 cycles after submitBag") {
  // submitBag at 3 with count 1: DONE at 3 + 1 + 2 = 6; reset at 6, idle at 7, submitted at 7 with count 3:
  // DONE at 7 + 3 + 2 = 12. A bag of none is done at 3 + 0 + 2; a submit in the cycle of a reset waits a
  // cycle.
  CHECK(tb_sparse_core() == recorded("TbSparseCore"));
  CHECK(by_cycle(probe_sparse_core()) == by_cycle(recorded("ProbeSC")));
}

TEST_CASE("SparseCore: lookups one row a cycle, wrapping sums, a table write after the read") {
  SparseCore sc(32, 2, 4);
  CHECK(sc.table_entries() == 32);
  sc.load_embedding(3, {0x7FFFFFFF, -1});
  sc.tick();
  sc.submit_bag({3, 3, 0, 0}, 2);
  sc.tick();  // T: submitted
  CHECK(sc.state() == SparseCore::State::kLookup);
  sc.load_embedding(3, {5, 5});  // lands after this cycle's lookup, which still reads the old row
  sc.tick();                     // T+1: row 3 (old)
  sc.tick();                     // T+2: row 3 (new)
  CHECK_FALSE(sc.is_done());
  sc.tick();              // T+3: cursor == count
  REQUIRE(sc.is_done());  // T + count + 2 after the submit
  CHECK(sc.result() == Emb{int32_t(0x80000004u), 4});
  SECTION("a bag of none is done two cycles after it is submitted") {
    sc.reset();
    sc.tick();
    sc.submit_bag({1, 2, 3, 4}, 0);
    sc.tick();
    sc.tick();
    REQUIRE(sc.is_done());
    CHECK(sc.result() == Emb{0, 0});
  }
  SECTION("a row never written reads Bluesim's 0xAA fill") {
    sc.reset();
    sc.tick();
    sc.submit_bag({7, 0, 0, 0}, 1);
    for (int i = 0; i < 3; ++i) sc.tick();
    REQUIRE(sc.is_done());
    CHECK(sc.result() == Emb{int32_t(0xAAAAAAAAu), int32_t(0xAAAAAAAAu)});
  }
}

TEST_CASE("SparseCore: calls its guards or ports refuse are errors") {
  SparseCore sc(8, 4, 2);
  CHECK(sc.table_entries() == 8);
  CHECK_THROWS_AS(sc.result(), SimError);  // guarded by SC_DONE
  CHECK_THROWS_AS(sc.reset(), SimError);
  CHECK_THROWS_WITH(sc.submit_bag({1, 2}, 3), Catch::Contains("count 3 over the bag's 2 entries"));
  CHECK_THROWS_WITH(sc.submit_bag({1, 8}, 2), Catch::Contains("index 8 outside its 8-entry table"));
  CHECK_THROWS_AS(sc.load_embedding(0, {1, 2}), SimError);  // 2 lanes, rows of 4
  sc.submit_bag({1, 2}, 2);
  CHECK_THROWS_AS(sc.submit_bag({1, 2}, 2), SimError);  // twice in a cycle
  sc.tick();
  CHECK_THROWS_AS(sc.submit_bag({1, 2}, 2), SimError);  // not idle
  CHECK_THROWS_AS(SparseCore(8, 0, 1), SimError);
}

TEST_CASE("HBMModel: the reference testbench, a read's tile latency cycles after its request") {
  CHECK(tb_hbm_model() == recorded("TbHBMModel"));  // the request at 1, its tile at 1 + 3
}

TEST_CASE("ChipNoC: the reference testbench and probes, a packet readable two cycles after its send") {
  // a packet on the ring reaches its inbox the cycle after, whatever the hops; a send to itself the next
  // cycle
  CHECK(tb_chip_noc() == recorded("TbChipNoC"));
  // a packet for a full inbox is dropped, a full inbox holds up no other, one packet a cycle end to end
  CHECK(by_cycle(probe_noc()) == by_cycle(recorded("ProbeNoC")));
}

TEST_CASE("ChipNoC: drops, guards and calls its ports refuse") {
  ChipNoc noc(2);
  for (uint32_t p = 0; p < 3; ++p) {
    noc.send(1, packet(1, 1, p));  // to itself: never waits, the third finds its inbox full
    noc.tick();
  }
  CHECK(noc.dropped() == 1);
  CHECK(noc.recv(1).payload == 0);
  CHECK_THROWS_AS(noc.recv(1), SimError);  // once a cycle
  noc.tick();
  CHECK(noc.recv(1).payload == 1);
  noc.tick();
  CHECK_FALSE(noc.can_recv(1));
  CHECK_THROWS_WITH(noc.recv(1), Catch::Contains("empty inbox"));
  CHECK_THROWS_WITH(noc.send(2, packet(0, 2, 0)), Catch::Contains("node 2 of a 2-node NoC"));
  ChipNoc three(3);
  CHECK_THROWS_WITH(three.send(0, packet(3, 0, 0)),
                    Catch::Contains("node 3 of a 3-node NoC"));  // dst's 2 bits
  CHECK(ChipNoc(2).can_send(0, packet(3, 0, 0)));                // truncate(3) to 1 bit: node 1
  CHECK_THROWS_AS(ChipNoc(17), SimError);
}

TEST_CASE("HBMModel: fully pipelined reads, the response register without a valid flag") {
  for (int latency : {1, 2, 5}) {
    INFO("latency " << latency);
    HbmModel hbm(16, latency);
    CHECK(hbm.entries() == 16);
    Tile uninit;
    uninit.fill(int32_t(0xAAAAAAAAu));
    for (int a = 0; a < 4; ++a) {
      Tile t{};
      t.fill(a + 1);
      hbm.write(a, t);
      hbm.tick();
    }
    CHECK(hbm.read_resp() == Tile{});  // the pipeline's reset value
    CHECK_FALSE(hbm.resp_valid());
    // one request a cycle at cycles 0..4; the last writes address 3 in the cycle it reads it
    for (int c = 0; c < 5 + latency; ++c) {
      if (c < 5) hbm.read_req(c == 4 ? 3 : c == 3 ? 15 : c);
      if (c == 4) hbm.write(3, Tile{});
      hbm.tick();
      const int req = c + 1 - latency;  // the request whose tile is now at the output
      if (req >= 0 && req < 5) {
        CHECK(hbm.resp_valid());
        Tile want;
        want.fill(req == 4 ? 4 : req + 1);
        CHECK(hbm.read_resp() == (req == 3 ? uninit : want));
      }
    }
    CHECK_FALSE(hbm.resp_valid());
    Tile last;
    last.fill(4);
    CHECK(hbm.read_resp() == last);  // the last response stays: nothing marks it stale
  }
  HbmModel hbm(64, 3);
  CHECK_THROWS_WITH(hbm.read_req(64), Catch::Contains("address 64 outside its 64 entries"));
  hbm.read_req(1);
  CHECK_THROWS_AS(hbm.read_req(2), SimError);  // one request a cycle
  CHECK_THROWS_AS(HbmModel(8, 0), SimError);
}

TEST_CASE("TinyTPUChip: the reference testbench, TC0's MXU result as the SparseCore's index") {
  // DISPATCH_MXU (tLen 1), WAIT_MXU, HALT: P = tLen + rows + 6 + 1 = 12 SXU cycles (test_mxu.cc). Started at
  // cycle 6, its first FETCH is at 7 and HALT's at 18: done from 19, when the forward submits a bag of one,
  // done 1 + 2 cycles later.
  REQUIRE(test::sxu_cycles("WMEM[0] = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\nAMEM[1] = 1 2 3 4\n"
                           "MXU WMEM[0], AMEM[1], tiles=1\nWAIT_MXU",
                           TinyTpuChip::tc0_config()) == 12);
  CHECK(tb_tinytpu_chip() == recorded("TbTinyTPUChip"));
}

TEST_CASE("TinyTPUChip: the forward is one-shot and waits for the MXU") {
  TinyTpuChip chip;
  CHECK_FALSE(chip.can_forward());  // the MXU never ran
  CHECK_THROWS_AS(chip.forward_tc0_result_to_sc(0), SimError);
  CHECK_THROWS_AS(chip.tc0_result(), SimError);
  CHECK_THROWS_WITH(chip.load_tc0_program(16, Instr{}), Catch::Contains("pc 16 outside its 4 bits"));
}

TEST_CASE("ChipTimeline: kernels of different cores overlap, copies take the ring NoC's cycles") {
  TensorCoreConfig cfg;
  cfg.cores = 4;
  cfg.noc_link_bytes = 16;
  ChipTimeline chip(cfg);
  CHECK((chip.hops(0, 1) == 1 && chip.hops(0, 2) == 2 && chip.hops(0, 3) == 1 && chip.hops(3, 1) == 2));
  // 256 bytes: 16 packets of 16, sent one a cycle; the first arrives a cycle after its send plus a cycle a
  // hop
  CHECK(chip.copy_cycles(0, 1, 256) == 16 + 1 + 1);
  CHECK(chip.copy_cycles(0, 2, 256) == 16 + 1 + 2);
  CHECK(chip.copy_cycles(0, 1, 1) == 1 + 1 + 1);
  CHECK(chip.run(0, 100) == 0);
  CHECK(chip.run(1, 50) == 0);  // overlaps core 0's kernel
  CHECK(chip.chip_cycles() == 100);
  // core 1 -> core 0 waits for core 0's kernel (the destination), then core 0 waits for it
  CHECK(chip.copy(1, 0, 256) == 100 + 18);
  CHECK(chip.core_cycles(0) == 118);
  CHECK(chip.core_cycles(1) == 50);  // the source works on
  // core 1's next copy out waits for its last: one copy at a time leaves a core
  CHECK(chip.copy(1, 2, 16) == 118 + 3);
  CHECK(chip.run(1, 10) == 50);
  CHECK(chip.chip_cycles() == 121);
  CHECK(chip.noc_bytes() == 272);
  CHECK_THROWS_WITH(chip.run(4, 1), Catch::Contains("core 4 of a chip of 4 cores"));
  chip.reset();
  CHECK((chip.chip_cycles() == 0 && chip.noc_bytes() == 0));
  SECTION("copies whose ways share a link take turns on it; the other direction is another link") {
    // 0 -> 2 clockwise over links 0-1 and 1-2, its 16 packets sent in 0..15: on link 1-2 in 1..16
    CHECK(chip.copy(0, 2, 256) == 16 + 1 + 2);
    // 1 -> 3 (two hops either way: clockwise) needs link 1-2 from its send: it sends from 17, after the last
    // packet of the first copy has crossed
    CHECK(chip.clockwise(1, 3));
    CHECK(chip.copy(1, 3, 256) == 17 + 16 + 1 + 2);
    // 2 -> 1 goes counter-clockwise over link 2-1, which is free; core 2's work (the first copy) ends at 19
    CHECK(!chip.clockwise(2, 1));
    CHECK(chip.copy(2, 1, 16) == 19 + 1 + 1 + 1);
  }
  SECTION(
      "noc_hop_cycles 0 is the reference ChipNoC: one ring for the chip, two cycles whatever the distance") {
    TensorCoreConfig ref;  // the reference testbench's three nodes, 4-byte packets
    ref.cores = 3;
    ref.noc_hop_cycles = 0;
    ChipTimeline three(ref);
    CHECK(three.copy_cycles(0, 1, 4) == 2);  // send at 0, in the inbox at 1, readable and taken at 2
    CHECK(three.copy_cycles(0, 2, 4) == 2);
    CHECK(three.copy(0, 1, 8) == 2 + 1);  // two packets, sent in 0 and 1
    // 2 -> 0 shares no link with 0 -> 1 on a ring, but the reference's one FIFO carries both: it sends from 2
    CHECK(three.copy(2, 0, 4) == 2 + 2);
  }
  SECTION("on the reference ChipNoC's packet a copy of one word is readable two cycles after its send") {
    TensorCoreConfig ref;  // 4-byte packets, one cycle a hop
    ref.cores = 2;
    ChipTimeline two(ref);
    CHECK(two.copy_cycles(0, 1, 4) == 3);  // send at 0, readable and taken at 2
    CHECK(two.copy_cycles(0, 1, 64) == 16 + 2);
  }
}
