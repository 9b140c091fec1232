using MySqlConnector;

namespace Queue.Core.Data;

public static class Retry
{
    /// <summary>
    /// Runs a transaction body again on deadlock (1213) or lock-wait timeout (1205). Both roll the transaction back
    /// entirely, so a retry is safe; callers never see them.
    /// </summary>
    public static async Task<T> OnDeadlockAsync<T>(Func<CancellationToken, Task<T>> body, CancellationToken ct, int attempts = 8)
    {
        for (var i = 1; ; i++)
        {
            try
            {
                return await body(ct);
            }
            catch (MySqlException ex) when (IsTransient(ex) && i < attempts)
            {
                await Task.Delay(Pause(i), ct);
            }
        }
    }

    /// <summary>
    /// A random pause whose bound doubles with each attempt (5, 10, 20 ... ms, at most 250): two deadlocked writers do
    /// not collide again in lockstep, and one that keeps losing to a long-running locker (the smaller transaction is
    /// InnoDB's victim, so a single completion loses to a wide reader) waits it out instead of spending its attempts
    /// within a few milliseconds. Eight attempts wait at most about 0.6 s in all.
    /// </summary>
    private static TimeSpan Pause(int attempt) =>
        TimeSpan.FromMilliseconds(Random.Shared.Next(1, Math.Min(250, 5 << Math.Min(attempt - 1, 6)) + 1));

    public static bool IsTransient(MySqlException ex) =>
        ex.ErrorCode is MySqlErrorCode.LockDeadlock or MySqlErrorCode.LockWaitTimeout;
}
