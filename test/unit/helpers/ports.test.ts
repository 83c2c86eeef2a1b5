import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { canListen, ephemeralRangeLow, freePort, portPool } from '../../helpers/ports.js';

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
