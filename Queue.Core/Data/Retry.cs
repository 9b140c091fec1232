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
                // Small randomized pause so two deadlocked claimers do not collide again in lockstep.
                await Task.Delay(Random.Shared.Next(1, 5 * i), ct);
            }
        }
    }

    public static bool IsTransient(MySqlException ex) =>
        ex.ErrorCode is MySqlErrorCode.LockDeadlock or MySqlErrorCode.LockWaitTimeout;
}
