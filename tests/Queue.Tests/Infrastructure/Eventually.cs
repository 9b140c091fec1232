namespace Queue.Tests;

/// <summary>Waiting for an observable condition, with a bounded deadline, instead of sleeping a fixed time.</summary>
internal static class Eventually
{
    /// <summary>True as soon as the condition holds; false once <paramref name="within"/> has passed without it.</summary>
    /// <param name="every">The pause between two checks (25 ms unless told): a check that sends a request paces itself as a client would.</param>
    public static async Task<bool> HoldsAsync(Func<Task<bool>> condition, TimeSpan within, TimeSpan? every = null)
    {
        var deadline = DateTime.UtcNow + within;
        while (true)
        {
            if (await condition())
            {
                return true;
            }
            if (DateTime.UtcNow > deadline)
            {
                return false;
            }
            await Task.Delay(every ?? TimeSpan.FromMilliseconds(25));
        }
    }

    /// <summary>Fails the test, naming <paramref name="what"/>, unless the condition holds within <paramref name="seconds"/>.</summary>
    public static async Task UntilAsync(Func<Task<bool>> condition, string what, int seconds = 60) =>
        Assert.True(await HoldsAsync(condition, TimeSpan.FromSeconds(seconds)), $"timed out waiting until {what}");

    public static Task UntilAsync(Func<bool> condition, string what, int seconds = 60) =>
        UntilAsync(() => Task.FromResult(condition()), what, seconds);
}
