namespace Queue.Core.Claims;

/// <summary>
/// How many /next calls were inside the claim path at once, at most, lately (this half second or the one before):
/// the number of callers a claim transaction waits for before it starts (<see cref="ClaimOptions.GatherMicroseconds"/>).
/// </summary>
internal sealed class CallerPeak
{
    private const long WindowMilliseconds = 500;
    private readonly Lock gate = new();
    private int inside;
    private int current;
    private int previous;
    private long windowStart = Environment.TickCount64;

    public void Enter()
    {
        lock (gate)
        {
            Roll();
            inside++;
            current = Math.Max(current, inside);
        }
    }

    public void Leave()
    {
        lock (gate)
        {
            inside--;
        }
    }

    public int Peak
    {
        get
        {
            lock (gate)
            {
                Roll();
                return Math.Max(current, previous);
            }
        }
    }

    private void Roll()
    {
        var now = Environment.TickCount64;
        var windows = (now - windowStart) / WindowMilliseconds;
        if (windows == 0)
        {
            return;
        }
        // After a quiet window, the peak before it is stale: only the callers inside now count.
        previous = windows == 1 ? current : inside;
        current = inside;
        windowStart = now;
    }
}
