import { describe, expect, it } from 'vitest';
import { commandListing, defineCommand, runCommandLine, UsageError, type Program } from './command-table.ts';
import { EXIT } from './exit-codes.ts';

class Refused extends Error {}

const greet = defineCommand<{ opened: string[] }, { loud: { type: 'boolean'; default: false } }>({
  synopsis: ['NAME [--loud]'],
  summary: ['greets NAME'],
  options: { loud: { type: 'boolean', default: false } },
  args: { count: 1 },
  run: async ({ args: [name], values, context }) => {
    if (name === 'nobody') throw new Refused('nobody is there');
    if (name === 'crash') throw new TypeError('a bug');
    if (name === 'wrong') throw new UsageError('wrong name');
    context.opened.push(values.loud ? name!.toUpperCase() : name!);
    return EXIT.ok;
  },
});

function program(opened: string[], closed: string[]): Program<{ opened: string[] }> {
  return {
    path: ['tool'],
    commands: { greet },
    usage: 'usage: tool greet NAME',
    label: (command) => `tool ${command}`,
    exitFor: (error) => (error instanceof Refused ? EXIT.failed : undefined),
    open: async () => ({ context: { opened }, close: async () => void closed.push('closed') }),
  };
}

async function run(...argv: string[]) {
  const opened: string[] = [];
  const closed: string[] = [];
  let out = '';
  let err = '';
  const io = { out: { write: (t: string) => (out += t) }, err: { write: (t: string) => (err += t) } };
  const code = await runCommandLine(program(opened, closed), ['tool', ...argv], {}, io);
  return { code, out, err, opened, closed };
}

describe('runCommandLine', () => {
  it('runs the command named with its options, inside what the program opens and closes', async () => {
    expect(await run('greet', 'ann', '--loud')).toMatchObject({ code: 0, opened: ['ANN'], closed: ['closed'] });
  });

  it('takes options before the command name too, as the programs did before sharing this table', async () => {
    expect(await run('--loud', 'greet', 'ann')).toMatchObject({ code: 0, opened: ['ANN'] });
    expect(await run('--loud', 'wave')).toMatchObject({
      code: 2,
      err: expect.stringMatching(/unknown command --loud/),
    });
  });

  it('answers --help on stdout with 0, and a missing or unknown command with the usage on stderr and 2', async () => {
    expect(await run('--help')).toMatchObject({ code: 0, out: 'usage: tool greet NAME\n', err: '' });
    expect(await run('greet', '--help')).toMatchObject({ code: 0, out: 'usage: tool greet NAME\n' });
    expect(await run()).toMatchObject({ code: 2, err: 'usage: tool greet NAME\n' });
    expect(await run('wave')).toMatchObject({
      code: 2,
      err: 'tool wave: unknown command wave\nusage: tool greet NAME\n',
    });
  });

  it('refuses unknown options and a wrong number of arguments before opening anything', async () => {
    const flag = await run('greet', 'ann', '--quiet');
    expect(flag).toMatchObject({ code: 2, closed: [] });
    expect(flag.err).toMatch(/^tool greet: Unknown option '--quiet'/);
    expect(await run('greet')).toMatchObject({ code: 2, closed: [], err: expect.stringMatching(/takes 1 argument/) });
  });

  it("maps a command's errors by the program's table, and throws on what it does not know", async () => {
    expect(await run('greet', 'nobody')).toMatchObject({ code: 1, err: 'tool greet: nobody is there\n' });
    expect(await run('greet', 'wrong')).toMatchObject({
      code: 2,
      err: 'tool greet: wrong name\nusage: tool greet NAME\n',
    });
    await expect(run('greet', 'crash')).rejects.toThrow(TypeError);
  });
});

describe('commandListing', () => {
  it('puts a short call and its summary on one line, a long one above its summary', () => {
    expect(commandListing({ greet }, 22)).toEqual(['  greet NAME [--loud]   greets NAME']);
    expect(commandListing({ greet }, 10)).toEqual(['  greet NAME [--loud]', '            greets NAME']);
  });
});
