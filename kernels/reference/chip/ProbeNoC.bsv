package ProbeNoC;

// Extra probe testbenches for ChipNoC (not part of the tinytpu repo).
// Four independent ChipNoC#(3) instances (nocA..nocD), one per question,
// all running from cycle 0 so that one probe cannot contaminate another.
//
// Three top-level variants:
//   mkProbeNoCConst : mkChipNoC inlined, node ids are compile-time constants
//                     (exactly how test/TbChipNoC.bsv calls it)
//   mkProbeNoCDyn   : mkChipNoC inlined, node ids / pkt.dst come from registers
//                     (run-time values, so inbox[idx] cannot be resolved statically)
//   mkProbeNoCSynth : uses the separately synthesized wrapper mkChipNoC3
//                     (a real module boundary; RDY_* cannot depend on arguments)
//
// The *_blocked rules read ConfigRegs so that they can be scheduled after the
// attempt rules and observe their PulseWires.

import Vector  :: *;
import ChipNoC :: *;
import ConfigReg :: *;

(* synthesize *)
module mkChipNoC3(ChipNoC_IFC#(3));
   ChipNoC_IFC#(3) n <- mkChipNoC;
   return n;
endmodule

module mkProbeBody#(Bool dynArgs, Bool useSynth, String tag)(Empty);

   ChipNoC_IFC#(3) nocA <- (useSynth ? mkChipNoC3 : mkChipNoC);
   ChipNoC_IFC#(3) nocB <- (useSynth ? mkChipNoC3 : mkChipNoC);
   ChipNoC_IFC#(3) nocC <- (useSynth ? mkChipNoC3 : mkChipNoC);
   ChipNoC_IFC#(3) nocD <- (useSynth ? mkChipNoC3 : mkChipNoC);

   Reg#(UInt#(2)) r0 <- mkReg(0);
   Reg#(UInt#(2)) r1 <- mkReg(1);
   Reg#(UInt#(2)) r2 <- mkReg(2);
   UInt#(2) n0 = dynArgs ? r0 : 0;
   UInt#(2) n1 = dynArgs ? r1 : 1;
   UInt#(2) n2 = dynArgs ? r2 : 2;

   function NocPacket mkPkt(UInt#(2) d, UInt#(2) s, Bit#(32) p) =
      NocPacket { dst: extend(d), src: extend(s), payload: p };

   Reg#(UInt#(16)) cycle <- mkReg(0);

   rule count_cycles;
      cycle <= cycle + 1;
      if (cycle == 40) begin
         $display("[%s] Cycle %0d: end of probe", tag, cycle);
         $finish(0);
      end
   endrule

   // ---------------------------------------------------------------
   // Probe A: recv(1) with only inbox 1 occupied (inboxes 0,2 empty)
   // ---------------------------------------------------------------
   Reg#(Bool) aGot <- mkConfigReg(False);
   PulseWire aTry <- mkPulseWire;

   Reg#(Bit#(3)) aLast <- mkReg(0);
   rule a_mon (cycle <= 8);   // prints canRecv only when it changes
      Bit#(3) v = useSynth ? {2'b0, pack(nocA.canRecv(n1))}
                           : {pack(nocA.canRecv(n2)), pack(nocA.canRecv(n1)), pack(nocA.canRecv(n0))};
      aLast <= v;
      if (cycle == 0 || v != aLast) begin
         if (useSynth)   // synthesized boundary: canRecv has a single port
            $display("[%s] Cycle %0d: A mon canRecv(1)=%b", tag, cycle, v[0]);
         else
            $display("[%s] Cycle %0d: A mon canRecv(0,1,2)=%b%b%b", tag, cycle, v[0], v[1], v[2]);
      end
   endrule

   rule a_send (cycle == 0);
      nocA.send(n0, mkPkt(n1, n0, 32'hA1));
      $display("[%s] Cycle %0d: A send 0->1 payload=0xA1 FIRED", tag, cycle);
   endrule

   rule a_recv (cycle >= 1 && cycle <= 8 && !aGot);
      let p <- nocA.recv(n1);
      aGot <= True;
      aTry.send;
      $display("[%s] Cycle %0d: A recv(1) FIRED payload=0x%0x src=%0d", tag, cycle, p.payload, p.src);
   endrule

   rule a_blocked (cycle >= 1 && cycle <= 8 && !aGot && !aTry);
      $display("[%s] Cycle %0d: A recv(1) did not fire", tag, cycle);
   endrule

   // ---------------------------------------------------------------
   // Probe B: fill inbox 2 (2 pkts, no recv) then send 0->1
   // ---------------------------------------------------------------
   Reg#(UInt#(4)) bFill <- mkReg(0);
   Reg#(Bool)     bSent <- mkConfigReg(False);
   Reg#(Bool)     bGot1 <- mkConfigReg(False);
   Reg#(UInt#(4)) bDr   <- mkReg(0);
   PulseWire bSendFired <- mkPulseWire;
   PulseWire bRecvFired <- mkPulseWire;

   Reg#(Bit#(3)) bLast <- mkReg(0);
   rule b_mon (cycle <= 25);   // prints canRecv only when it changes
      Bit#(3) v = useSynth ? {2'b0, pack(nocB.canRecv(n1))}
                           : {pack(nocB.canRecv(n2)), pack(nocB.canRecv(n1)), pack(nocB.canRecv(n0))};
      bLast <= v;
      if (cycle == 0 || v != bLast) begin
         if (useSynth)   // synthesized boundary: canRecv has a single port
            $display("[%s] Cycle %0d: B mon canRecv(1)=%b", tag, cycle, v[0]);
         else
            $display("[%s] Cycle %0d: B mon canRecv(0,1,2)=%b%b%b", tag, cycle, v[0], v[1], v[2]);
      end
   endrule

   rule b_fill (bFill < 2);
      Bit#(32) p = (bFill == 0) ? 32'hB1 : 32'hB2;
      nocB.send(n0, mkPkt(n2, n0, p));
      bFill <= bFill + 1;
      $display("[%s] Cycle %0d: B fill send 0->2 payload=0x%0x FIRED", tag, cycle, p);
   endrule

   rule b_send (cycle >= 5 && !bSent);
      nocB.send(n0, mkPkt(n1, n0, 32'hB3));
      bSent <= True;
      bSendFired.send;
      $display("[%s] Cycle %0d: B send 0->1 payload=0xB3 FIRED", tag, cycle);
   endrule

   rule b_recv1 (cycle >= 5 && !bGot1);
      let p <- nocB.recv(n1);
      bGot1 <= True;
      bRecvFired.send;
      $display("[%s] Cycle %0d: B recv(1) FIRED payload=0x%0x", tag, cycle, p.payload);
   endrule

   rule b_send_blocked (cycle >= 5 && cycle <= 25 && !bSent && !bSendFired);
      $display("[%s] Cycle %0d: B send 0->1 did not fire", tag, cycle);
   endrule

   rule b_recv_blocked (cycle >= 5 && cycle <= 25 && !bGot1 && !bRecvFired);
      $display("[%s] Cycle %0d: B recv(1) did not fire", tag, cycle);
   endrule

   // drain inbox 2 only from cycle 14 on
   rule b_drain2 (cycle >= 14 && bDr < 2);
      let p <- nocB.recv(n2);
      bDr <= bDr + 1;
      $display("[%s] Cycle %0d: B recv(2) FIRED payload=0x%0x", tag, cycle, p.payload);
   endrule

   // ---------------------------------------------------------------
   // Probe C: 3 packets to node 1 without receiving, then receive all
   // ---------------------------------------------------------------
   Reg#(UInt#(4)) cCnt <- mkConfigReg(0);
   Reg#(UInt#(4)) cGot <- mkReg(0);
   PulseWire cSendFired <- mkPulseWire;

   Reg#(Bit#(3)) cLast <- mkReg(0);
   rule c_mon (cycle <= 25);   // prints canRecv only when it changes
      Bit#(3) v = useSynth ? {2'b0, pack(nocC.canRecv(n1))}
                           : {pack(nocC.canRecv(n2)), pack(nocC.canRecv(n1)), pack(nocC.canRecv(n0))};
      cLast <= v;
      if (cycle == 0 || v != cLast) begin
         if (useSynth)   // synthesized boundary: canRecv has a single port
            $display("[%s] Cycle %0d: C mon canRecv(1)=%b", tag, cycle, v[0]);
         else
            $display("[%s] Cycle %0d: C mon canRecv(0,1,2)=%b%b%b", tag, cycle, v[0], v[1], v[2]);
      end
   endrule

   rule c_send (cCnt < 3);
      Bit#(32) p = 32'hC1 + extend(pack(cCnt));
      nocC.send(n0, mkPkt(n1, n0, p));
      cCnt <= cCnt + 1;
      cSendFired.send;
      $display("[%s] Cycle %0d: C send 0->1 payload=0x%0x FIRED", tag, cycle, p);
   endrule

   rule c_send_blocked (cCnt < 3 && !cSendFired);
      $display("[%s] Cycle %0d: C send 0->1 did not fire (cCnt=%0d)", tag, cycle, cCnt);
   endrule

   rule c_recv (cycle >= 10 && cycle <= 30 && cGot < 3);
      let p <- nocC.recv(n1);
      cGot <= cGot + 1;
      $display("[%s] Cycle %0d: C recv(1) FIRED payload=0x%0x", tag, cycle, p.payload);
   endrule

   rule c_final (cycle == 31);
      $display("[%s] Cycle %0d: C received %0d of 3 packets", tag, cycle, cGot);
   endrule

   // ---------------------------------------------------------------
   // Probe D: send 0->2 on every cycle 0..5, recv(2) on every cycle
   // ---------------------------------------------------------------
   Reg#(UInt#(4)) dCnt <- mkReg(0);
   Reg#(UInt#(4)) dGot <- mkReg(0);
   PulseWire dSendFired <- mkPulseWire;

   Reg#(Bit#(3)) dLast <- mkReg(0);
   rule d_mon (cycle <= 12);   // prints canRecv only when it changes
      Bit#(3) v = useSynth ? {2'b0, pack(nocD.canRecv(n2))}
                           : {pack(nocD.canRecv(n2)), pack(nocD.canRecv(n1)), pack(nocD.canRecv(n0))};
      dLast <= v;
      if (cycle == 0 || v != dLast) begin
         if (useSynth)   // synthesized boundary: canRecv has a single port
            $display("[%s] Cycle %0d: D mon canRecv(2)=%b", tag, cycle, v[0]);
         else
            $display("[%s] Cycle %0d: D mon canRecv(0,1,2)=%b%b%b", tag, cycle, v[0], v[1], v[2]);
      end
   endrule

   rule d_send (cycle <= 5);
      Bit#(32) p = 32'hD0 + extend(pack(cycle));
      nocD.send(n0, mkPkt(n2, n0, p));
      dCnt <= dCnt + 1;
      dSendFired.send;
      $display("[%s] Cycle %0d: D send 0->2 payload=0x%0x FIRED", tag, cycle, p);
   endrule

   rule d_send_blocked (cycle <= 5 && !dSendFired);
      $display("[%s] Cycle %0d: D send 0->2 did not fire", tag, cycle);
   endrule

   rule d_recv (cycle <= 20);
      let p <- nocD.recv(n2);
      dGot <= dGot + 1;
      $display("[%s] Cycle %0d: D recv(2) FIRED payload=0x%0x", tag, cycle, p.payload);
   endrule

   rule d_final (cycle == 21);
      $display("[%s] Cycle %0d: D sent %0d, received %0d", tag, cycle, dCnt, dGot);
   endrule

endmodule

(* synthesize *)
module mkProbeNoCConst(Empty);
   let m <- mkProbeBody(False, False, "const");
endmodule

(* synthesize *)
module mkProbeNoCDyn(Empty);
   let m <- mkProbeBody(True, False, "dyn");
endmodule

(* synthesize *)
module mkProbeNoCSynth(Empty);
   let m <- mkProbeBody(True, True, "synth");
endmodule

endpackage
