import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { canListen, ephemeralRangeLow, freePort, portPool, workerShare } from '../../helpers/ports.js';

function listenOn(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      resolve(server);
    });
  });
}

describe('test ports: picked where no outgoing connection can take them before a child listens', () => {
  describe('the kernel’s ephemeral range', () => {
    let dir = '';
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'ports-'));
    });
    afterEach(() => {
      rmSync(dir, { recursive: true, force: true });
    });

    it('when the range file says "40000 60999", then its first port is 40000', () => {
      const file = join(dir, 'range');
      writeFileSync(file, '40000\t60999\n');
      expect(ephemeralRangeLow(file)).to.equal(40_000);
    });

    it('when the file is missing or unreadable as a range, then the usual 32768 is assumed', () => {
      expect(ephemeralRangeLow(join(dir, 'missing'))).to.equal(32_768);
      const file = join(dir, 'garbage');
      writeFileSync(file, 'none');
      expect(ephemeralRangeLow(file)).to.equal(32_768);
    });
  });

  describe('the pool below it', () => {
    it('when the ephemeral range starts at 32768, then ports 10000–32767 are the pool', () => {
      expect(portPool(32_768)).to.deep.equal({ low: 10_000, size: 22_768 });
    });

    it('when the ephemeral range starts too low to leave 2000 ports above 10000, then there is no pool', () => {
      expect(portPool(11_999)).to.equal(null);
      expect(portPool(1_024)).to.equal(null);
    });
  });

  describe('a parallel run’s workers', () => {
    const whole = { low: 10_000, size: 22_768 };

    it('when workers 0, 1 and 7 ask, then each gets its own eighth of the pool, side by side', () => {
      expect(workerShare(whole, '0')).to.deep.equal({ low: 10_000, size: 2_846 });
      expect(workerShare(whole, '1')).to.deep.equal({ low: 12_846, size: 2_846 });
      expect(workerShare(whole, '7')).to.deep.equal({ low: 29_922, size: 2_846 });
    });

    it('when a replaced worker is numbered 9, then it takes the share worker 1 left', () => {
      expect(workerShare(whole, '9')).to.deep.equal(workerShare(whole, '1'));
    });

    it('when the process is no worker, or the number is not one, then the whole pool is walked', () => {
      for (const id of [undefined, '', 'x', '-1', '1.5']) expect(workerShare(whole, id), String(id)).to.deep.equal(whole);
    });

    it('when an eighth of the pool would be under 1000 ports, then the whole pool is walked', () => {
      const small = { low: 10_000, size: 7_000 };
      expect(workerShare(small, '1')).to.deep.equal(small);
    });
  });

  describe('a free port', () => {
    it('when ports are asked for, then each is below the ephemeral range, distinct, and can be listened on', async () => {
      const low = ephemeralRangeLow();
      const ports = [await freePort(), await freePort(), await freePort(), await freePort()];
      expect(new Set(ports).size).to.equal(4);
      for (const port of ports) {
        if (portPool(low)) expect(port).to.be.below(low).and.at.least(10_000);
        expect(await canListen(port), `port ${port}`).to.equal(true);
      }
    });

    it('when something listens on a port, then it is not free', async () => {
      const port = await freePort();
      const server = await listenOn(port);
      try {
        expect(await canListen(port)).to.equal(false);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
      expect(await canListen(port)).to.equal(true);
    });
  });
});
