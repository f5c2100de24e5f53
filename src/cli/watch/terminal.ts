/**
 * The screen of `rxsem watch`. On a terminal: the alternate screen, cursor hidden, keys read raw
 * (q, Ctrl-C), every frame drawn from the top-left; all undone on `restore()`, so the user's shell
 * comes back as it was. Elsewhere (a pipe, a file, a test): plain frames one after another, no
 * escape codes, stdin left alone.
 */

const ESC = '\u001b['
const ENTER_ALT_SCREEN = `${ESC}?1049h`
const LEAVE_ALT_SCREEN = `${ESC}?1049l`
const HIDE_CURSOR = `${ESC}?25l`
const SHOW_CURSOR = `${ESC}?25h`
const CLEAR_AND_HOME = `${ESC}2J${ESC}H`

export interface Screen {
  /** True when drawing on a terminal (redraws in place); false for plain, appended frames. */
  readonly interactive: boolean
  /** How to quit, for the frame's last line: undefined when not drawing on a terminal. */
  readonly keyHint: string | undefined
  readonly width: number
  draw(lines: readonly string[]): void
  /** Undoes everything `openScreen` changed on the terminal. Safe to call twice. */
  restore(): void
}

/**
 * Opens the screen on stdout.
 *
 * @param onQuit - Called when the user presses q or Ctrl-C (raw mode turns Ctrl-C into a key).
 * @param onResize - Called when the terminal changes size.
 */
export function openScreen(onQuit: () => void, onResize: () => void): Screen {
  const out = process.stdout
  const input = process.stdin
  const interactive = out.isTTY === true
  const keys = input.isTTY === true && interactive
  let restored = false

  const onKey = (data: Buffer): void => {
    const key = data.toString('utf8')
    if (key === 'q' || key === 'Q' || key === '\u0003') onQuit()
  }
  if (interactive) {
    out.write(ENTER_ALT_SCREEN + HIDE_CURSOR)
    out.on('resize', onResize)
  }
  if (keys) {
    input.setRawMode(true)
    input.on('data', onKey)
    input.resume()
  }

  return {
    interactive,
    // Without a terminal to read keys from, Ctrl-C still sends SIGINT.
    keyHint: !interactive ? undefined : keys ? 'q or Ctrl-C: quit' : 'Ctrl-C: quit',
    get width() {
      return interactive ? (out.columns ?? 80) : 80
    },
    draw(lines) {
      if (restored) return
      if (interactive) out.write(CLEAR_AND_HOME + lines.join('\r\n'))
      else out.write(`${lines.join('\n')}\n\n`)
    },
    restore() {
      if (restored) return
      restored = true
      if (keys) {
        input.off('data', onKey)
        input.setRawMode(false)
        input.pause()
      }
      if (interactive) {
        out.off('resize', onResize)
        out.write(SHOW_CURSOR + LEAVE_ALT_SCREEN)
      }
    },
  }
}
