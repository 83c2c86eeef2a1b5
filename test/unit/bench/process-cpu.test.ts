import { expect } from 'chai';
import {
  groupTicks,
  mainThreadSchedule,
  namedGroupTicks,
  parseMachineCpu,
  parseSchedstat,
  sampleCpu,
  type ProcStat,
} from '../../../scripts/bench/process-cpu.js';

const stat = (pid: number, ppid: number, comm: string, own: number, children = 0): ProcStat => ({ pid, ppid, comm, own, children });

/** This process (100), its PostgreSQL under `su` with two backends, nats-server, two gateway nodes, a connector; and a stranger. */
const TREE: readonly ProcStat[] = [
  stat(1, 0, 'init', 5_000, 90_000),
  stat(100, 1, 'node', 300, 40),
  stat(200, 100, 'su', 1),
  stat(201, 200, 'postgres', 50, 700), // the postmaster: 700 ticks of backends it has reaped
  stat(202, 201, 'postgres', 120),
  stat(203, 201, 'postgres', 80),
  stat(300, 100, 'nats-server', 90),
  stat(400, 100, 'node', 1_000),
  stat(401, 100, 'node', 900, 5),
  stat(500, 100, 'node', 60),
  stat(900, 1, 'postgres', 10_000), // another PostgreSQL on the machine: not ours
];

describe('bench CPU by process', () => {
  it('counts PostgreSQL as the postmaster, its live backends and the backends it has reaped, only under this process', () => {
    const ticks = groupTicks(TREE, 100, [500]);
    expect(ticks?.postgres).to.equal(50 + 700 + 120 + 80);
    expect(ticks?.nats).to.equal(90);
    expect(ticks?.connector).to.equal(60);
  });

  it('without gateway pids, this process is the gateway and its other children the load generator', () => {
    const ticks = groupTicks(TREE, 100, [500]);
    expect(ticks?.gateway).to.equal(300);
    expect(ticks?.['load generator']).to.equal(40 + 1 + 1_000 + 900);
  });

  it('with gateway pids, those processes are the gateway and this process the load generator', () => {
    const ticks = groupTicks(TREE, 100, [500], [400, 401]);
    expect(ticks?.gateway).to.equal(1_000 + 900 + 5);
    expect(ticks?.['load generator']).to.equal(300 + 40 + 1);
    expect(ticks?.postgres).to.equal(950);
  });

  it('makes the gateway unavailable when one of its processes is gone, and everything when this process is not listed', () => {
    expect(groupTicks(TREE, 100, [], [400, 777])?.gateway).to.be.NaN;
    expect(groupTicks(TREE, 100, [], [900])?.gateway).to.be.NaN;
    expect(groupTicks(TREE, 12_345)).to.equal(null);
  });

  it('samples this machine in seconds', function () {
    const sample = sampleCpu();
    if (sample === null) this.skip();
    expect(sample.gateway).to.be.greaterThan(0);
  });

  it("counts named groups of a caller's choosing among this process's descendants only, reaped children included", () => {
    const ticks = namedGroupTicks(TREE, 100, ['db', 'node', 'nats'], (pid, comm) =>
      comm === 'postgres' ? 'db' : pid === 400 || pid === 401 ? 'node' : null,
    );
    expect(ticks).to.deep.equal({ db: 50 + 700 + 120 + 80, node: 1_000 + 900 + 5, nats: 0 });
  });

  it('has no named groups when this process is not in the reading', () => {
    expect(namedGroupTicks(TREE, 12_345, ['db'], () => 'db')).to.equal(null);
  });

  it("reads the machine's busy and idle time from /proc/stat's first line, I/O wait as idle, guest time not twice", () => {
    // user nice system idle iowait irq softirq steal guest guest_nice, at 100 ticks a second
    expect(parseMachineCpu('cpu  700 10 200 1000 40 5 15 30 400 0', 100)).to.deep.equal({
      busyMs: (700 + 10 + 200 + 5 + 15 + 30) * 10,
      idleMs: (1000 + 40) * 10,
    });
    expect(parseMachineCpu('cpu0 700 10 200 1000 40 5 15 30', 100)).to.equal(null);
    expect(parseMachineCpu('cpu  x 10 200', 100)).to.equal(null);
  });

  it("reads a thread's time on a CPU and waiting for one from its schedstat, in ms", () => {
    expect(parseSchedstat('2500000 7000000 42\n')).to.deep.equal({ runMs: 2.5, waitMs: 7 });
    expect(parseSchedstat('')).to.equal(null);
  });

  it("reads this process's main thread from the scheduler", function () {
    const schedule = mainThreadSchedule(process.pid);
    if (schedule === null) this.skip();
    expect(schedule.runMs).to.be.greaterThan(0);
    expect(mainThreadSchedule(2 ** 22 + 1)).to.equal(null);
  });
});
