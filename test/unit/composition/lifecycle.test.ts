import { expect } from 'chai';
import { lifecycleOf, type Component } from '../../../src/composition/lifecycle.js';

function recorder() {
  const steps: string[] = [];
  const part = (name: string, fails: { start?: boolean; stop?: boolean } = {}): Component => ({
    name,
    start: () => {
      steps.push(`start ${name}`);
      if (fails.start) throw new Error(`${name} did not start`);
    },
    stop: async () => {
      await Promise.resolve();
      steps.push(`stop ${name}`);
      if (fails.stop) throw new Error(`${name} did not stop`);
    },
  });
  return { steps, part };
}

describe('lifecycle of the node parts', () => {
  it('when started and stopped, then the parts start in order and stop in reverse', async () => {
    const { steps, part } = recorder();
    const lifecycle = lifecycleOf([part('persistence'), part('shards'), part('workers')]);
    await lifecycle.start();
    await lifecycle.stop();
    expect(steps).to.deep.equal(['start persistence', 'start shards', 'start workers', 'stop workers', 'stop shards', 'stop persistence']);
  });

  it('when a part fails to start, then it and the parts started before it stop in reverse and the failure is rethrown', async () => {
    const { steps, part } = recorder();
    const lifecycle = lifecycleOf([part('persistence'), part('shards', { start: true }), part('workers')]);
    let failure: unknown;
    await lifecycle.start().catch((error: unknown) => (failure = error));
    expect(failure).to.be.instanceOf(Error).with.property('message', 'shards did not start');
    expect(steps).to.deep.equal(['start persistence', 'start shards', 'stop shards', 'stop persistence']);
  });

  it('when stopped after a failed start, then only the parts never stopped are stopped', async () => {
    const { steps, part } = recorder();
    const lifecycle = lifecycleOf([part('persistence'), part('shards', { start: true }), part('workers')]);
    await lifecycle.start().catch(() => undefined);
    steps.length = 0;
    await lifecycle.stop();
    expect(steps).to.deep.equal(['stop workers']);
  });

  it('when never started, then a stop still stops every part once', async () => {
    const { steps, part } = recorder();
    const lifecycle = lifecycleOf([part('persistence'), part('scheduler')]);
    await lifecycle.stop();
    await lifecycle.stop();
    expect(steps).to.deep.equal(['stop scheduler', 'stop persistence']);
  });

  it('when a part fails to stop, then the parts before it still stop and the failure is rethrown at the end', async () => {
    const { steps, part } = recorder();
    const failed: string[] = [];
    const lifecycle = lifecycleOf([part('persistence'), part('relay', { stop: true }), part('workers')], (name) => failed.push(name));
    await lifecycle.start();
    let failure: unknown;
    await lifecycle.stop().catch((error: unknown) => (failure = error));
    expect(failure).to.be.instanceOf(Error).with.property('message', 'relay did not stop');
    expect(failed).to.deep.equal(['relay']);
    expect(steps.slice(3)).to.deep.equal(['stop workers', 'stop relay', 'stop persistence']);
  });

  it('when several parts fail to stop, then every failure is rethrown together', async () => {
    const { part } = recorder();
    const lifecycle = lifecycleOf([part('persistence', { stop: true }), part('relay', { stop: true })]);
    let failure: unknown;
    await lifecycle.stop().catch((error: unknown) => (failure = error));
    expect(failure).to.be.instanceOf(AggregateError).with.property('errors').with.length(2);
  });
});
