use super::*;
use crate::hw::allow::Allowlist;
use crate::testkit::skipped;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::mpsc;

fn cfg(allow: &[&str]) -> Config {
    let mut c = Config::default();
    c.hardware.allow = Allowlist::parse(allow).unwrap();
    c
}

fn args(json: &str) -> Args {
    Args::parse(json).unwrap()
}

fn words(tool: &str, json: &str) -> Vec<String> {
    vec![tool.to_string(), json.to_string()]
}

/// A pseudo-terminal pair: the master (the "device" side) and the slave's path (the port
/// the tool opens). `None` only after [`skipped`] said why (the system cannot make one;
/// CI's can, and fails the test instead).
fn pty() -> Option<(std::fs::File, String)> {
    let (master, slave) = crate::testkit::pty("serial_port over a pseudo-terminal")?;
    let slave = slave.to_str().expect("a pty's name is ASCII").to_string();
    Some((std::fs::File::from(master), slave))
}

/// A fake device behind `master`: reads until `request` arrives, then answers `reply`
/// (an empty `request`: reads until the port is closed again). Sends what it read, and the
/// master (closing it would hang the port up under the tool), on the returned channel.
fn answer(
    mut master: std::fs::File,
    request: &'static [u8],
    reply: &'static [u8],
) -> mpsc::Receiver<(Vec<u8>, std::fs::File)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while std::time::Instant::now() < give_up {
            match master.read(&mut buf) {
                Ok(n) if n > 0 => {
                    got.extend_from_slice(&buf[..n]);
                    if !request.is_empty() && got.windows(request.len()).any(|w| w == request) {
                        let _ = master.write_all(reply);
                        break;
                    }
                }
                // EIO: no slave is open: not yet (wait), or no more (done).
                _ if got.is_empty() => std::thread::sleep(std::time::Duration::from_millis(5)),
                _ => break,
            }
        }
        let _ = tx.send((got, master));
    });
    rx
}

#[test]
fn schemas_are_json_objects_with_required_keys_that_exist() {
    for t in SPECS {
        let v = crate::json::parse_value(&t.parameters).unwrap();
        assert_eq!(
            crate::json::str_at(&v, "type"),
            Some("object"),
            "{}",
            t.name
        );
        let props = crate::json::get(&v, "properties")
            .and_then(crate::json::as_object)
            .unwrap();
        let req = crate::json::get(&v, "required")
            .and_then(crate::json::as_array)
            .unwrap();
        for r in req.iter() {
            let r = crate::json::as_str(r).unwrap();
            assert!(props.contains_key(r), "{}: {r}", t.name);
        }
        assert!(t.description.len() < 500, "{}", t.name);
    }
}

#[test]
fn without_an_allowlist_the_tools_do_not_exist() {
    let c = Config::default();
    assert!(!offered(&c));
    assert!(offered(&cfg(&["gpiochip0 read"])));
    assert!(matches!(
        run_cli(&c, &words("gpio", r#"{"action":"read","chip":"gpiochip0","line":1}"#)),
        Err(ToolError::Denied(m)) if m.contains("hardware.allow")
    ));
    assert!(matches!(
        needs_approval("gpio", &args("{}"), &c),
        Err(ToolError::Unknown(_))
    ));
    assert_eq!(needs_approval("read_file", &args("{}"), &c), Ok(false));
}

#[test]
fn calls_nothing_covers_are_refused_before_any_device_is_opened() {
    let c = cfg(&["gpiochip0:17 write", "i2c-1:0x48 read", "ttyUSB0 read"]);
    let cases: &[(&str, &str, &str)] = &[
        (
            "gpio",
            r#"{"action":"read","chip":"gpiochip0","line":4}"#,
            "GPIO read /dev/gpiochip0 line 4",
        ),
        (
            "gpio",
            r#"{"action":"write","chip":"gpiochip1","line":17,"value":1}"#,
            "GPIO write /dev/gpiochip1 line 17 = 1",
        ),
        (
            "i2c",
            r#"{"action":"read_reg","bus":"i2c-1","address":"0x49","register":0}"#,
            "I2C read /dev/i2c-1 address 0x49 register 0x00, 1 bytes",
        ),
        (
            "i2c",
            r#"{"action":"write","bus":"i2c-1","address":"0x48","data":[1]}"#,
            "",
        ),
        (
            "i2c",
            r#"{"action":"scan","bus":"i2c-0"}"#,
            "I2C scan /dev/i2c-0",
        ),
        (
            "spi",
            r#"{"device":"spidev0.0","data":[1]}"#,
            "SPI transfer on /dev/spidev0.0 (mode 0, 500000 Hz): 0x01",
        ),
        (
            "serial_port",
            r#"{"action":"read","device":"ttyS0"}"#,
            "Serial read on /dev/ttyS0 at 115200 baud",
        ),
    ];
    for (tool, json, summary) in cases {
        match plan(tool, &args(json), &c) {
            // Covered by a read entry but not there: the device's absence is the error.
            Err(ToolError::Failed(m)) if summary.is_empty() => {
                assert!(m.contains("/dev/i2c-1 does not exist"), "{m}")
            }
            Err(ToolError::Denied(m)) => assert_eq!(
                m,
                format!(
                    "{summary}: hardware.allow does not list this; the owner can add an entry to config.json (docs/hardware.md)"
                ),
            ),
            other => panic!("{json}: {other:?}"),
        }
    }
    // Path tricks are refused, whatever the list says.
    for json in [
        r#"{"action":"read","device":"../etc/passwd"}"#,
        r#"{"action":"read","device":"/dev/../etc/shadow"}"#,
        r#"{"action":"read","device":"/etc/shadow"}"#,
    ] {
        assert!(
            matches!(
                plan("serial_port", &args(json), &c),
                Err(ToolError::Denied(_))
            ),
            "{json}"
        );
    }
    // A listed device that is not there says so.
    match plan(
        "i2c",
        &args(r#"{"action":"read","bus":1,"address":72}"#),
        &c,
    ) {
        Err(ToolError::Failed(m)) => assert!(m.contains("/dev/i2c-1 does not exist"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn arguments_are_checked_with_clear_errors() {
    let c = cfg(&[
        "gpiochip0 write",
        "i2c-1 write",
        "spidev0.0 write",
        "ttyUSB0 write",
    ]);
    let cases: &[(&str, &str, &str)] = &[
        (
            "gpio",
            r#"{"action":"toggle","chip":"gpiochip0","line":1}"#,
            "\"action\" must be",
        ),
        (
            "gpio",
            r#"{"action":"read","line":1}"#,
            "\"chip\" is required",
        ),
        (
            "gpio",
            r#"{"action":"read","chip":"i2c-1","line":1}"#,
            "is not a GPIO chip",
        ),
        (
            "gpio",
            r#"{"action":"read","chip":"gpiochip0","bias":"up","line":1}"#,
            "\"bias\"",
        ),
        (
            "i2c",
            r#"{"action":"read","bus":"i2c-1","address":"0x80"}"#,
            "\"address\" must be 0 to 127",
        ),
        (
            "i2c",
            r#"{"action":"read","bus":"i2c-1","address":"zz"}"#,
            "like 72 or 0x48",
        ),
        (
            "i2c",
            r#"{"action":"read","bus":"gpiochip0","address":1}"#,
            "not an I2C bus",
        ),
        (
            "spi",
            r#"{"device":"ttyUSB0","data":[1]}"#,
            "not an SPI device",
        ),
        (
            "serial_port",
            r#"{"action":"send","device":"ttyUSB0"}"#,
            "\"action\" must be",
        ),
    ];
    for (tool, json, words) in cases {
        match plan(tool, &args(json), &c) {
            Err(ToolError::BadArgs(m)) => assert!(m.contains(words), "{json}: {m}"),
            other => panic!("{json}: {other:?}"),
        }
    }
}

#[test]
fn byte_and_number_arguments_parse_in_the_forms_models_send() {
    assert_eq!(hex_bytes("0a ff"), Some(vec![0x0a, 0xff]));
    assert_eq!(hex_bytes(" 0x0a, 0XFF "), Some(vec![0x0a, 0xff]));
    assert_eq!(hex_bytes("0xa 7"), Some(vec![0x0a, 0x07]));
    assert_eq!(hex_bytes("0aff"), None);
    assert_eq!(hex_bytes("abc"), None);
    assert_eq!(hex_bytes("zz"), None);
    assert_eq!(hex_bytes("0x"), None);
    assert_eq!(hex_bytes(""), Some(vec![]));
    let a = args(
        r#"{"a":"0x48","b":"72","c":72,"d":[1,2,255],"e":[256],"f":"0a 0b","g":[],"h":[1,2,3],"i":"-1"}"#,
    );
    assert_eq!(num(&a, "a").unwrap(), Some(0x48));
    assert_eq!(num(&a, "b").unwrap(), Some(72));
    assert_eq!(num(&a, "c").unwrap(), Some(72));
    assert_eq!(num(&a, "z").unwrap(), None);
    assert!(num(&a, "i").is_err());
    assert_eq!(num_in(&a, "c", 0, 100, None), Ok(72));
    assert!(num_in(&a, "c", 0, 10, None).is_err());
    assert_eq!(num_in(&a, "z", 0, 10, Some(3)), Ok(3));
    assert!(num_in(&a, "z", 0, 10, None).is_err());
    assert_eq!(bytes(&a, "d", 4).unwrap(), vec![1, 2, 255]);
    assert!(bytes(&a, "e", 4).is_err());
    assert_eq!(bytes(&a, "f", 4).unwrap(), vec![10, 11]);
    assert!(bytes(&a, "g", 4).is_err());
    assert!(bytes(&a, "h", 2).is_err());
    assert!(bytes(&a, "z", 2).is_err());
    let mut s = String::new();
    push_hex(&mut s, &[1, 0xab], 8);
    assert_eq!(s, "0x01 0xab");
    s.clear();
    push_hex(&mut s, &[1, 2, 3], 2);
    assert_eq!(s, "0x01 0x02 … (3 bytes)");
    s.clear();
    push_text(&mut s, b"OK\r\n\x00\\", 80);
    assert_eq!(s, r#""OK\r\n\x00\\""#);
    s.clear();
    push_text(&mut s, b"abcdef", 3);
    assert_eq!(s, "\"abc…\"");
}

/// Nodes named like GPIO, I2C and SPI devices under /dev/shm: real files under /dev/, so
/// planning sees existing devices of each kind, and the ioctls then fail as on a wrong
/// device.
/// `None` only after [`skipped`] said why (no writable /dev/shm).
fn fake_nodes(tag: &str) -> Option<(PathBuf, String, String, String)> {
    let dir = PathBuf::from("/dev/shm").join(format!("yc-hw-{}-{tag}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        skipped(
            "planning against fake device nodes",
            &format!("cannot make a folder in /dev/shm: {e}"),
        );
        return None;
    }
    let node = |name: &str| {
        let p = dir.join(name);
        std::fs::write(&p, b"").expect("write a fake node in /dev/shm");
        p.to_str().expect("an ASCII path").to_string()
    };
    Some((
        dir.clone(),
        node("gpiochip7"),
        node("i2c-7"),
        node("spidev7.0"),
    ))
}

#[test]
fn decisions_reach_approval_and_summaries_name_what_is_touched() {
    let Some((dir, chip, bus, spidev)) = fake_nodes("plan") else {
        return;
    };
    let c = cfg(&[
        &format!("{chip}:17 write"),
        &format!("{chip} read"),
        &format!("{bus}:0x48 read"),
        &format!("{bus}:0x40-0x41 write"),
        &format!("{spidev} read"),
    ]);
    let cases: &[(&str, String, Decision, String)] = &[
        (
            "gpio",
            format!(r#"{{"action":"write","chip":"{chip}","line":17,"value":1}}"#),
            Decision::Allowed,
            format!("GPIO write {chip} line 17 = 1"),
        ),
        (
            "gpio",
            format!(
                r#"{{"action":"pulse","chip":"{chip}","line":4,"value":true,"duration_ms":250}}"#
            ),
            Decision::NeedsApproval,
            format!("GPIO pulse {chip} line 4 = 1 for 250 ms"),
        ),
        (
            "gpio",
            format!(r#"{{"action":"wait_edge","chip":"{chip}","line":4}}"#),
            Decision::Allowed,
            format!("GPIO wait for an edge on {chip} line 4 (up to 10000 ms)"),
        ),
        (
            "i2c",
            format!(
                r#"{{"action":"write_reg","bus":"{bus}","address":"0x48","register":"0x01","data":[96,160]}}"#
            ),
            Decision::NeedsApproval,
            format!("I2C write {bus} address 0x48 register 0x01: 0x60 0xa0"),
        ),
        (
            "i2c",
            format!(
                r#"{{"action":"read_reg","bus":"{bus}","address":72,"register":0,"length":2}}"#
            ),
            Decision::Allowed,
            format!("I2C read {bus} address 0x48 register 0x00, 2 bytes"),
        ),
        (
            "i2c",
            format!(r#"{{"action":"scan","bus":"{bus}"}}"#),
            Decision::Allowed,
            format!("I2C scan {bus}"),
        ),
        (
            "spi",
            format!(r#"{{"device":"{spidev}","data":"01 80 00"}}"#),
            Decision::NeedsApproval,
            format!("SPI transfer on {spidev} (mode 0, 500000 Hz): 0x01 0x80 0x00"),
        ),
    ];
    for (tool, json, decision, summary) in cases {
        let p = plan(tool, &args(json), &c).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(p.decision, *decision, "{json}");
        assert_eq!(&p.summary, summary, "{json}");
        assert_eq!(
            needs_approval(tool, &args(json), &c),
            Ok(*decision == Decision::NeedsApproval),
            "{json}"
        );
        assert_eq!(
            approval_summary(tool, &args(json), &c).as_ref(),
            Ok(summary)
        );
    }
    // The I2C scan probes only the allowed addresses.
    let p = plan(
        "i2c",
        &args(&format!(r#"{{"action":"scan","bus":"{bus}"}}"#)),
        &c,
    )
    .unwrap();
    assert_eq!(
        p.op,
        Op::I2c {
            bus: bus.clone(),
            addr: 0,
            act: I2cAct::Scan(vec![0x40, 0x41, 0x48])
        }
    );
    // The devices are files, not chips: the ioctls fail with a clear sentence.
    let e = run_cli(
        &c,
        &words(
            "gpio",
            &format!(r#"{{"action":"read","chip":"{chip}","line":17}}"#),
        ),
    );
    assert!(
        matches!(&e, Err(ToolError::Failed(m)) if m.contains("does not support")),
        "{e:?}"
    );
    let e = run_cli(
        &c,
        &words("i2c", &format!(r#"{{"action":"scan","bus":"{bus}"}}"#)),
    );
    assert!(
        matches!(&e, Err(ToolError::Failed(m)) if m.contains("does not support")),
        "{e:?}"
    );
    // A write to a read entry from the command line needs --yes.
    let w = words("spi", &format!(r#"{{"device":"{spidev}","data":[1]}}"#));
    assert!(matches!(run_cli(&c, &w), Err(ToolError::Denied(m)) if m.contains("--yes")));
    let mut yes = w.clone();
    yes.push("--yes".into());
    assert!(matches!(run_cli(&c, &yes), Err(ToolError::Failed(_))));
    assert!(
        matches!(run_cli(&c, &words("gpio", "")[..1]), Err(ToolError::BadArgs(m)) if m.contains("usage"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serial_port_exchanges_with_a_device_on_a_pty() {
    let Some((master, slave)) = pty() else { return };
    let c = cfg(&[&format!("{slave} write")]);
    let seen = answer(master, b"PING\n", b"PONG\r\nextra");
    let out = run_cli(
        &c,
        &words(
            "serial_port",
            &format!(r#"{{"action":"exchange","device":"{slave}","baud":9600,"data":"PING","end":"lf","timeout_ms":5000}}"#),
        ),
    )
    .unwrap();
    assert_eq!(
        out,
        format!(
            "Serial exchange on {slave} at 9600 baud: \"PING\\n\" -> received 6 bytes (until text seen): \"PONG\\r\\n\""
        )
    );
    assert_eq!(seen.recv().unwrap().0, b"PING\n");
}

#[test]
fn serial_port_writes_raw_bytes_and_reads_stop_at_count_or_time() {
    let Some((master, slave)) = pty() else { return };
    let c = cfg(&[&format!("{slave} write")]);
    let seen = answer(master, b"\r\n", b"abcdef");
    let out = run_cli(
        &c,
        &words(
            "serial_port",
            &format!(r#"{{"action":"exchange","device":"{slave}","data":"01 ff 0d 0a","hex":true,"until":"","max_bytes":4,"timeout_ms":5000}}"#),
        ),
    )
    .unwrap();
    assert!(
        out.ends_with("received 4 bytes (max_bytes reached): \"abcd\""),
        "{out}"
    );
    assert_eq!(seen.recv().unwrap().0, [0x01, 0xff, 0x0d, 0x0a]);

    // Nobody answers: the read ends at the timeout with what it has (nothing).
    let Some((master, slave)) = pty() else { return };
    let c = cfg(&[&format!("{slave} read")]);
    let _keep = master;
    let out = run_cli(
        &c,
        &words(
            "serial_port",
            &format!(r#"{{"action":"read","device":"{slave}","timeout_ms":50}}"#),
        ),
    )
    .unwrap();
    assert_eq!(
        out,
        format!("Serial read on {slave} at 115200 baud -> received 0 bytes (timed out): \"\"")
    );
}

#[test]
fn serial_port_writes_to_read_entries_ask_and_the_console_is_off_limits() {
    let Some((master, slave)) = pty() else { return };
    let mut c = cfg(&[&format!("{slave} read")]);
    let w = format!(r#"{{"action":"write","device":"{slave}","data":"hi"}}"#);
    assert_eq!(needs_approval("serial_port", &args(&w), &c), Ok(true));
    assert_eq!(
        approval_summary("serial_port", &args(&w), &c),
        Ok(format!("Serial write on {slave} at 115200 baud: \"hi\""))
    );
    let r = format!(r#"{{"action":"read","device":"{slave}","timeout_ms":10}}"#);
    assert_eq!(needs_approval("serial_port", &args(&r), &c), Ok(false));
    let seen = answer(master, b"", b"");
    let mut yes = words("serial_port", &w);
    yes.push("--yes".into());
    assert_eq!(
        run_cli(&c, &yes).unwrap(),
        format!("Serial write on {slave} at 115200 baud: \"hi\" -> sent")
    );
    assert_eq!(seen.recv().unwrap().0, b"hi");
    // The chat console's device, named either way, is refused even when listed.
    c.serial.device = slave.trim_start_matches("/dev/").to_string();
    match plan("serial_port", &args(&r), &c) {
        Err(ToolError::Denied(m)) => assert!(m.contains("serial chat console"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_tool_set_offers_and_dispatches_the_hardware_tools_only_with_an_allowlist() {
    let Some((master, slave)) = pty() else { return };
    let db = std::rc::Rc::new(crate::store::Db::open_in_memory().unwrap());
    let ws = std::env::temp_dir();
    let plain = Tools::new(
        ws.clone(),
        std::rc::Rc::new(Config::default()),
        crate::runtime::Workers::start(1),
        db.clone(),
        std::rc::Rc::new(crate::chat::outbound::Nowhere),
    );
    assert!(
        !plain
            .specs(crate::chat::ChannelKind::Terminal)
            .iter()
            .any(|s| is_tool(&s.name))
    );
    assert!(!plain.is_tool("gpio"));
    let ctx = crate::tools::CallContext {
        session: "stdio:hw".into(),
        channel: crate::chat::ChannelKind::Terminal,
    };
    let w = format!(r#"{{"action":"write","device":"{slave}","data":"yo"}}"#);
    assert!(matches!(
        smol::block_on(plain.call("serial_port", &w, &ctx)),
        Err(ToolError::Unknown(_))
    ));
    let t = Tools::new(
        ws,
        std::rc::Rc::new(cfg(&[&format!("{slave} read")])),
        crate::runtime::Workers::start(1),
        db,
        std::rc::Rc::new(crate::chat::outbound::Nowhere),
    );
    assert_eq!(
        t.specs(crate::chat::ChannelKind::Terminal)
            .iter()
            .filter(|s| is_tool(&s.name))
            .count(),
        4
    );
    assert!(t.is_tool("serial_port"));
    assert!(t.call_needs_approval("serial_port", &w));
    assert!(!t.call_needs_approval(
        "serial_port",
        r#"{"action":"read","device":"/dev/ttyNOPE"}"#
    ));
    assert_eq!(
        t.approval_summary("serial_port", &w)
            .unwrap()
            .map(|a| a.summary),
        Some(format!("Serial write on {slave} at 115200 baud: \"yo\""))
    );
    let seen = answer(master, b"", b"");
    assert_eq!(
        smol::block_on(t.call("serial_port", &w, &ctx)).unwrap(),
        format!("Serial write on {slave} at 115200 baud: \"yo\" -> sent")
    );
    assert_eq!(seen.recv().unwrap().0, b"yo");
}
