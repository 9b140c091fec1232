using System.Text;

namespace Queue.Tests.Client;

/// <summary>A thread-safe writer that keeps the lines written to it and tells a watcher about each as it is written.</summary>
public sealed class LineWriter(Action<string>? onLine) : TextWriter
{
    private readonly List<string> lines = [];
    private readonly StringBuilder current = new();

    public override Encoding Encoding => Encoding.UTF8;

    public IReadOnlyList<string> Lines
    {
        get
        {
            lock (lines)
            {
                return [.. lines];
            }
        }
    }

    public override void Write(char value)
    {
        string? line = null;
        lock (lines)
        {
            if (value == '\n')
            {
                line = current.ToString().TrimEnd('\r');
                current.Clear();
                lines.Add(line);
            }
            else
            {
                current.Append(value);
            }
        }
        if (line is not null)
        {
            onLine?.Invoke(line);
        }
    }
}
