import Foundation
import KirokuAdvisor
import Testing

@Suite("Erlang C")
struct ErlangCTests {
    /// The textbook formula, term by term in logarithms: an independent computation to check the
    /// Erlang B recursion the advisor uses.
    static func direct(servers c: Int, load a: Double) -> Double {
        func logTerm(_ k: Int) -> Double { Double(k) * log(a) - lgamma(Double(k) + 1) }
        let top = exp(logTerm(c)) * Double(c) / (Double(c) - a)
        let sum = (0..<c).reduce(0.0) { $0 + exp(logTerm($1)) }
        return top / (sum + top)
    }

    @Test("hand-derived values: C(1, a) = a, C(2, 1) = 1/3, C(3, 2) = 4/9")
    func handValues() {
        #expect(abs(ErlangC(arrivalRate: 0.5, serviceTime: 1, servers: 1).probabilityOfWaiting - 0.5) < 1e-12)
        #expect(abs(ErlangC(arrivalRate: 1, serviceTime: 1, servers: 2).probabilityOfWaiting - 1.0 / 3) < 1e-12)
        #expect(abs(ErlangC(arrivalRate: 2, serviceTime: 1, servers: 3).probabilityOfWaiting - 4.0 / 9) < 1e-12)
    }

    @Test("agrees with the textbook sum across loads and pool sizes, up to hundreds of hosts", arguments: [
        (1, 0.3), (2, 1.5), (5, 4.2), (7, 4.7), (10, 8.0), (25, 20.0), (50, 45.0), (120, 100.0), (400, 380.0),
    ])
    func textbook(_ servers: Int, _ load: Double) {
        let queue = ErlangC(arrivalRate: load, serviceTime: 1, servers: servers)
        let expected = Self.direct(servers: servers, load: load)
        #expect(abs(queue.probabilityOfWaiting - expected) < 1e-9 * max(1, expected), "C(\(servers), \(load))")
        #expect(abs(queue.meanWait - expected / (Double(servers) - load)) < 1e-9)
    }

    @Test("the project's example: 10 images/s at 0.47 s per host: 5 hosts wait about 1.3 s, 6 about 175 ms, 7 about 53 ms")
    func seedExample() {
        func wait(_ hosts: Int) -> Double { ErlangC(arrivalRate: 10, serviceTime: 0.47, servers: hosts).meanWait }
        #expect(abs(wait(5) - 1.3) < 0.1)
        #expect(abs(wait(6) - 0.175) < 0.005)
        #expect(abs(wait(7) - 0.053) < 0.002)
        #expect(ErlangC.servers(arrivalRate: 10, serviceTime: 0.47, meeting: WaitObjective(target: 0.1)) == 7)
        #expect(!ErlangC(arrivalRate: 10, serviceTime: 0.47, servers: 4).isStable)
        #expect(ErlangC(arrivalRate: 10, serviceTime: 0.47, servers: 4).meanWait == .infinity)
    }

    @Test("percentile objectives: P(wait > t) = C·exp(−(c − a)·t / S), falling as hosts are added")
    func percentile() {
        let queue = ErlangC(arrivalRate: 10, serviceTime: 0.47, servers: 7)
        #expect(abs(queue.probabilityOfWaitingLonger(than: 0.1) - queue.probabilityOfWaiting * exp(-2.3 * 0.1 / 0.47)) < 1e-12)
        let objective = WaitObjective(target: 0.1, percentile: 0.95)
        let hosts = ErlangC.servers(arrivalRate: 10, serviceTime: 0.47, meeting: objective)
        #expect(ErlangC(arrivalRate: 10, serviceTime: 0.47, servers: hosts).probabilityOfWaitingLonger(than: 0.1) <= 0.05)
        #expect(ErlangC(arrivalRate: 10, serviceTime: 0.47, servers: hosts - 1).probabilityOfWaitingLonger(than: 0.1) > 0.05)
    }
}
