import { installWallClock } from './wall-clock.js';

/** Imported first by a child node: its wall clock starts where the test process's is (`WALL_CLOCK_OFFSET_MS`). */
installWallClock(Number(process.env.WALL_CLOCK_OFFSET_MS ?? '0'));
