namespace Queue.Tests.Infrastructure;

/// <summary>The repository's root: the first folder above the test binaries that holds Queue.slnx.</summary>
public static class RepoDirectory
{
    public static string Root()
    {
        var dir = new DirectoryInfo(AppContext.BaseDirectory);
        while (dir is not null && !File.Exists(Path.Combine(dir.FullName, "Queue.slnx")))
        {
            dir = dir.Parent;
        }
        return dir?.FullName ?? throw new InvalidOperationException("Queue.slnx not found above the test's folder");
    }
}
